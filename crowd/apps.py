"""App configuration for crowdqa's `crowd` app."""

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "crowd"
