"""The crowd platforms' system checks (ids ``crowdqa.*``, listed with the others in docs/deployment.md).

They live with the platforms' traits, which say what each platform needs; ``crowd.apps`` registers them.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Warning, register

from crowd.providers.traits import arriving, named


@register("crowdqa", deploy=True)
def check_public_base_url(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Crowd platforms send workers to PUBLIC_BASE_URL; MTurk requires https for ExternalQuestion."""
    if not settings.DEBUG and not settings.PUBLIC_BASE_URL.startswith("https://"):
        return [
            Warning(
                f"PUBLIC_BASE_URL is '{settings.PUBLIC_BASE_URL}', not an https URL.",
                hint=f"{named(arriving(), 'and')} workers must reach HIT pages over https; "
                "set PUBLIC_BASE_URL.",
                id="crowdqa.W002",
            )
        ]
    return []
