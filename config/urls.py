"""Top-level URL routes: the admin, the researcher pages, the HIT pages and the local crowd's pages."""

from django.contrib import admin
from django.urls import include, path

from annotation.hit_urls import hit_patterns, worker_patterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include(hit_patterns)),
    path("work/", include(worker_patterns)),
    path("crowd/", include("crowd.urls")),
    path("releases/", include("exports.urls")),
    path("benchmarks/", include("evaluation.urls")),
    path("", include("annotation.urls")),
]
