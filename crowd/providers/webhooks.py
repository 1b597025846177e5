"""What a platform's webhook becomes once verified: an event crowdqa acts on, or a refusal.

Each platform that sends webhooks reads them in its own package (``crowd.providers.prolific.webhooks``)
and answers ``PlatformTraits.read_webhook``; the one webhook view (``crowd.views.platform_webhook``) asks
the platform named in the URL and never knows its scheme.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class WebhookError(Exception):
    """A webhook request that must be refused (answer 400 for ``bad_body``, else 403; do not process)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class WebhookEvent:
    """A verified platform event.

    Attributes:
        event_id: the dedup key (explicit id, or derived from type, resource and status).
        event_type: the platform's event name (Prolific ``submission.status.change`` ...).
        resource_id: the submission or the platform batch the event is about.
        status: the new status ("" when the event has none).
        participant_id: for submission events.
        unit_ref: the platform batch or unit the event names besides ``resource_id`` ("" when none).
        payload: the whole decoded body.
    """

    event_id: str
    event_type: str
    resource_id: str
    status: str = ""
    participant_id: str = ""
    unit_ref: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
