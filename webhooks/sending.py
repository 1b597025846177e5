"""Send one delivery: claim it, POST the signed body, record the attempt, decide on a retry.

The delivery job (:func:`webhooks.tasks.deliver`) calls :func:`attempt_delivery` and, when it returns a
wait, asks Celery to run it again after that wait. A delivery is claimed under a row lock for the length
of one attempt (``claimed_until``), so two jobs for the same delivery (a retry and the sweep, or a replay)
never send it at the same time, and a succeeded or failed delivery is never sent again by a stale job.

What counts as what:
- a 2xx answer: delivered;
- no answer (connection refused, timeout), a 5xx, 408, 425 or 429: transient, retried with backoff
  (``WEBHOOK_RETRY_BASE_SECONDS * 4 ** (n - 1)``, at most ``WEBHOOK_RETRY_MAX_SECONDS``) until
  ``WEBHOOK_MAX_ATTEMPTS`` attempts;
- a host name that does not resolve: transient as well;
- any other answer (a 3xx is not followed, a 4xx says the receiver refused it) or a refused address:
  failed at once; a researcher can replay it after fixing the receiver.

Each attempt connects only to the addresses its own check vetted (:mod:`webhooks.transport`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from webhooks.addresses import AddressRefused, Unresolvable, vet
from webhooks.models import Attempt, Delivery
from webhooks.signing import SIGNATURE_HEADER, sign
from webhooks.transport import pinned_session

logger = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({408, 425, 429})
EXCERPT_CHARS = 500


@dataclass(frozen=True)
class Outcome:
    """What one call did: ``sent`` (an attempt was made), the delivery's status, and the wait before the
    next attempt (None when there is none to make)."""

    delivery_id: int
    sent: bool
    status: str
    retry_in: Optional[float] = None


def backoff_seconds(attempts: int) -> float:
    """The wait after ``attempts`` failed attempts."""
    base = float(settings.WEBHOOK_RETRY_BASE_SECONDS)
    return float(min(float(settings.WEBHOOK_RETRY_MAX_SECONDS), base * 4 ** max(0, attempts - 1)))


def _claim(delivery_id: int) -> Optional[Delivery]:
    """Lock the delivery, and hold it for one attempt when it is pending and nobody else holds it."""
    now = timezone.now()
    hold = timedelta(seconds=float(settings.WEBHOOK_TIMEOUT_SECONDS) * 2 + 30)
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update()
            .select_related("endpoint", "event")
            .filter(pk=delivery_id)
            .first()
        )
        if delivery is None or delivery.status != Delivery.Status.PENDING:
            return None
        if delivery.claimed_until is not None and delivery.claimed_until > now:
            return None
        delivery.claimed_until = now + hold
        delivery.attempts += 1
        delivery.save(update_fields=["claimed_until", "attempts"])
    return delivery


def _post(delivery: Delivery) -> tuple[Optional[int], str, str, bool]:
    """POST the signed body once; returns (status code, error, answer excerpt, transient)."""
    endpoint, event = delivery.endpoint, delivery.event
    try:
        target = vet(endpoint.url, allow_private=settings.WEBHOOK_ALLOW_PRIVATE)
    except Unresolvable as exc:
        return None, str(exc), "", True
    except AddressRefused as exc:
        return None, str(exc), "", False
    body = event.body()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "crowdqa-webhooks/1",
        "Crowdqa-Event-Id": str(event.uid),
        "Crowdqa-Event-Type": event.type,
        "Crowdqa-Delivery": str(delivery.pk),
        "Crowdqa-Attempt": str(delivery.attempts),
        SIGNATURE_HEADER: sign(endpoint.signing_secrets(), body),
    }
    timeout = float(settings.WEBHOOK_TIMEOUT_SECONDS)
    try:
        with (
            pinned_session(target) as session,
            session.post(
                endpoint.url,
                data=body,
                headers=headers,
                timeout=(timeout, timeout),
                allow_redirects=False,
                stream=True,
            ) as answer,
        ):
            excerpt = next(answer.iter_content(EXCERPT_CHARS), b"").decode("utf-8", "replace")
            code = answer.status_code
    except requests.Timeout as exc:
        return None, f"timed out after {timeout:g} s: {type(exc).__name__}", "", True
    except requests.RequestException as exc:
        return None, f"{type(exc).__name__}: {exc}"[:1000], "", True
    if 200 <= code < 300:
        return code, "", excerpt, False
    transient = code >= 500 or code in TRANSIENT_STATUSES
    return code, f"answered {code}", excerpt, transient


def attempt_delivery(delivery_id: int) -> Outcome:
    """Make the next attempt of a delivery, if it is pending and free; record it and its outcome."""
    delivery = _claim(delivery_id)
    if delivery is None:
        current = Delivery.objects.filter(pk=delivery_id).values_list("status", flat=True).first()
        return Outcome(delivery_id, sent=False, status=current or "missing")
    started = timezone.now()
    clock = time.monotonic()
    code, error, excerpt, transient = _post(delivery)
    Attempt.objects.create(
        delivery=delivery,
        number=delivery.attempts,
        started_at=started,
        duration_ms=int((time.monotonic() - clock) * 1000),
        status_code=code,
        error=error,
        response_excerpt=excerpt,
    )
    retry_in: Optional[float] = None
    delivery.last_status_code = code
    delivery.last_error = error
    delivery.claimed_until = None
    if not error:
        delivery.status = Delivery.Status.SUCCEEDED
        delivery.delivered_at = timezone.now()
        delivery.next_attempt_at = None
    elif transient and delivery.attempts < int(settings.WEBHOOK_MAX_ATTEMPTS):
        retry_in = backoff_seconds(delivery.attempts)
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=retry_in)
    else:
        delivery.status = Delivery.Status.FAILED
        delivery.next_attempt_at = None
    delivery.save(
        update_fields=[
            "status",
            "last_status_code",
            "last_error",
            "claimed_until",
            "delivered_at",
            "next_attempt_at",
        ]
    )
    logger.info(
        "Delivery(%s) of Event(%s) to Endpoint(%s), attempt %d: %s",
        delivery.pk,
        delivery.event_id,
        delivery.endpoint_id,
        delivery.attempts,
        code or error,
    )
    return Outcome(delivery.pk, sent=True, status=delivery.status, retry_in=retry_in)
