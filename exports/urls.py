"""Researcher pages of the exports app (mounted at /releases/ by config/urls.py)."""

from django.urls import path

from exports import views

app_name = "exports"

urlpatterns = [
    path("", views.ReleaseListView.as_view(), name="list"),
    path("new/", views.ReleaseCreateView.as_view(), name="new"),
    path("jobs/<int:pk>/", views.ExportJobView.as_view(), name="job"),
    path("jobs/<int:pk>/confirm/", views.confirm_export, name="confirm"),
    path("<int:pk>/", views.ReleaseDetailView.as_view(), name="detail"),
    path("<int:pk>/files/<path:relpath>", views.release_file, name="file"),
    path("<int:pk>/download.zip", views.release_archive, name="archive"),
]
