"""System checks with stable ids (``crowdqa.W001`` ...) for configuration mistakes."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import Warning, register


@register("crowdqa", deploy=True)
def check_secret_key(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """Warn when production runs on the built-in development key."""
    if not settings.DEBUG and settings.SECRET_KEY.startswith("crowdqa-insecure"):
        return [
            Warning(
                "DJANGO_SECRET_KEY is not set: the built-in development key is in use.",
                hint="Set DJANGO_SECRET_KEY to a long random value before exposing crowdqa to workers.",
                id="crowdqa.W001",
            )
        ]
    return []


@register("crowdqa", deploy=True)
def check_public_base_url(app_configs: Any, **kwargs: Any) -> list[Warning]:
    """Crowd platforms send workers to PUBLIC_BASE_URL; MTurk requires https for ExternalQuestion."""
    if not settings.DEBUG and not settings.PUBLIC_BASE_URL.startswith("https://"):
        return [
            Warning(
                f"PUBLIC_BASE_URL is '{settings.PUBLIC_BASE_URL}', not an https URL.",
                hint="MTurk and Prolific workers must reach HIT pages over https; set PUBLIC_BASE_URL.",
                id="crowdqa.W002",
            )
        ]
    return []
