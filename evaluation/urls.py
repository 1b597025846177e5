"""Researcher pages of the evaluation app (mounted at /benchmarks/ by config/urls.py)."""

from django.urls import path

from evaluation import views

app_name = "evaluation"

urlpatterns = [
    path("", views.ReleaseBenchmarksListView.as_view(), name="index"),
    path("release/<int:pk>/", views.LeaderboardView.as_view(), name="leaderboard"),
    path("release/<int:pk>/start/", views.start_benchmark, name="start"),
    path("run/<int:pk>/", views.BenchmarkRunDetailView.as_view(), name="run"),
    path("run/<int:pk>/results.json", views.run_results, name="run-results"),
]
