"""Worker-facing routes: platform arrival, assignment pages (signed links) and the local crowd."""

from django.contrib.auth.views import LogoutView
from django.urls import path

from worker import hit_views, model_check_views, worker_views

hit_patterns = (
    [
        path("hit/<int:batch_id>/", hit_views.arrive, name="arrive"),
        path("hit/preview/<int:pk>/", hit_views.hit_preview, name="preview"),
        path("hit/tutorial/<slug:kind>/", hit_views.tutorial, name="tutorial"),
        path("a/<str:token>/", hit_views.assignment_page, name="assignment"),
        path("a/<str:token>/draft/", hit_views.save_draft, name="draft"),
        path("a/<str:token>/active/", hit_views.report_active, name="active"),
        path("a/<str:token>/locate-span/", hit_views.locate_span, name="locate-span"),
        path("a/<str:token>/model-check/", model_check_views.model_check, name="model-check"),
        path("a/<str:token>/return/", hit_views.return_hit, name="return"),
        path("a/<str:token>/consent/", hit_views.give_consent, name="consent"),
        path(
            "a/<str:token>/documents/<int:pk>/pages/<int:page>.png",
            hit_views.document_page_image,
            name="page-image",
        ),
    ],
    "hits",
)

worker_patterns = (
    [
        path("", worker_views.home, name="home"),
        path("login/", worker_views.WorkerLoginView.as_view(), name="login"),
        path("logout/", LogoutView.as_view(next_page="worker:login"), name="logout"),
        path("batches/<int:batch_id>/next/", worker_views.next_hit, name="next"),
        path("invite/<str:token>/", worker_views.invite, name="invite"),
    ],
    "worker",
)
