"""Researcher pages of the exports app (mounted by config/urls.py)."""

from django.urls import path  # noqa: F401

app_name = "exports"

urlpatterns: list = []
