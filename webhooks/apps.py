"""The ``webhooks`` app: endpoints, events, deliveries (stored first, sent by a Celery job)."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Outbound webhooks; the apps above emit events through :func:`webhooks.events.emit`."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "webhooks"
    verbose_name = "Webhooks"
