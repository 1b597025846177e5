"""``/api/v1/``: the endpoints, the OpenAPI 3 schema (``schema/``) and its interactive docs (``docs/``)."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from api import action_views, batch_views, views

router = DefaultRouter()
router.register("corpora", views.CorpusViewSet, basename="corpus")
router.register("batches", batch_views.BatchViewSet, basename="batch")
router.register("assignments", views.AssignmentViewSet, basename="assignment")
router.register("jobs", views.JobViewSet, basename="job")
router.register("releases", views.ReleaseViewSet, basename="release")
router.register("benchmarks", views.BenchmarkViewSet, basename="benchmark")
router.register("workers", action_views.WorkerViewSet, basename="worker")
router.register("webhooks", action_views.EndpointViewSet, basename="webhook")
router.register("webhook-deliveries", action_views.DeliveryViewSet, basename="webhook-delivery")

app_name = "api"
urlpatterns = [
    # The schema lists the routes of the URLconf that holds the API (not the site's: config/api_urls.py).
    path("schema/", SpectacularAPIView.as_view(urlconf="config.api_urls"), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("", include(router.urls)),
]
