"""Top-level URL routes: the admin, researcher sign-in and sign-out, the researcher pages, the HIT pages
and the local crowd's pages. The REST API's routes are added for requests under ``/api/`` only
(:mod:`config.api_urls`)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from worker.hit_urls import hit_patterns, worker_patterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path(
        "accounts/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(post_reset_login=False),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("", include(hit_patterns)),
    path("work/", include(worker_patterns)),
    path("crowd/", include("crowd.urls")),
    path("releases/", include("exports.urls")),
    path("benchmarks/", include("evaluation.urls")),
    path("", include("console.urls")),
]

handler400 = "config.error_views.bad_request"
handler403 = "config.error_views.permission_denied"
handler404 = "config.error_views.page_not_found"
handler500 = "config.error_views.server_error"
