"""Who may show crowdqa pages in a frame: the platforms that show HIT pages in their iframe (MTurk) may
frame HIT pages; nobody may frame anything else.

Every response carries ``X-Frame-Options: DENY`` (Django's clickjacking middleware, settings
``X_FRAME_OPTIONS``). HIT pages must appear inside MTurk's iframe, so :func:`platform_frameable` replaces
that header with ``Content-Security-Policy: frame-ancestors`` naming the platforms' framing sites only
(each platform's ``frame_origins`` and configured stand-ins: :func:`crowd.providers.traits.framing_origins`),
which browsers enforce instead of X-Frame-Options.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpResponse

from crowd.providers.factory import config_from
from crowd.providers.traits import framing_origins


def frame_ancestors() -> str:
    """The CSP ``frame-ancestors`` value of HIT pages: crowdqa and the platforms that frame them."""
    return " ".join(["'self'", *framing_origins(config_from(settings))])


def platform_frameable(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Let the platforms that frame HIT pages (MTurk), and nobody else, frame the responses of ``view``."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponse:
        response = view(*args, **kwargs)
        response.xframe_options_exempt = True  # type: ignore[attr-defined]
        response["Content-Security-Policy"] = f"frame-ancestors {frame_ancestors()}"
        return response

    return wrapped
