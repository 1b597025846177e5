"""Researcher pages of the evaluation app (mounted by config/urls.py)."""

from django.urls import path  # noqa: F401

app_name = "evaluation"

urlpatterns: list = []
