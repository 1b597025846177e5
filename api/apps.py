"""The REST API face (``/api/v1/``): researchers' scripts drive crowdqa through the console's services."""

from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The ``api`` app: token or session authenticated endpoints with the console's permissions."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "api"
    verbose_name = "REST API"
