"""Top-level URL routes: the admin, the researcher pages and (later) the worker-facing HIT pages."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("annotation.urls")),
]
