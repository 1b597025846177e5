"""App configuration for crowdqa's `distractors` app."""

from django.apps import AppConfig


class DistractorsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "distractors"
