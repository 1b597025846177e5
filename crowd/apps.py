"""App configuration for crowdqa's `crowd` app."""

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "crowd"

    def ready(self) -> None:
        """Register the DB-backed local provider (``crowd.providers`` stays free of Django)."""
        from crowd.providers.factory import register_provider
        from crowd.providers.local.provider import LocalProvider

        register_provider(LocalProvider.name, LocalProvider.from_config)
