"""App configuration for crowdqa's `filters` app."""

from django.apps import AppConfig


class FiltersConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "filters"
