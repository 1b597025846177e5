"""Emit an event: store it once per key with a delivery per subscribed endpoint, then queue the sends.

Called by the jobs and services of the apps above (after a submission, a review decision, a batch's end,
a budget stop, a release build, a benchmark run). Emitting is cheap when nobody listens (one query for
the active endpoints) and never raises into the caller's work: a webhook must not undo a submission.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Optional

from django.db import IntegrityError, transaction

from webhooks.models import Delivery, Endpoint, Event

logger = logging.getLogger(__name__)


def emit(event_type: str, key: str, data: dict[str, Any]) -> Optional[Event]:
    """Record ``event_type`` for ``key`` (once: a second emit of the same key does nothing) and queue it.

    Args:
        event_type: one of :class:`webhooks.models.EventType`.
        key: what makes the event unique (``"submission.received:42"``): a job that runs twice emits once.
        data: the JSON-ready payload (ids, counts, names; never a worker's platform id).

    Returns:
        The stored event, or None when no active endpoint subscribes to ``event_type``.
    """
    endpoints = [e for e in Endpoint.objects.filter(active=True) if e.wants(event_type)]
    if not endpoints:
        return None
    try:
        with transaction.atomic():  # a savepoint: a failure here leaves the caller's transaction usable
            event, created = Event.objects.get_or_create(
                key=key[:200], defaults={"type": event_type, "data": data}
            )
            if not created:
                return event
            deliveries = Delivery.objects.bulk_create([Delivery(endpoint=e, event=event) for e in endpoints])
    except IntegrityError:
        logger.info("Event %s was emitted by another job at the same time", key)
        return Event.objects.filter(key=key[:200]).first()
    except Exception:
        logger.exception("Event %s could not be stored; the caller's work goes on", key)
        return None
    queue_deliveries([d.pk for d in deliveries])
    return event


def subscribed_types() -> set[str]:
    """The event types some active endpoint receives (one query): a caller that emits many events
    skips building the payloads of the types nobody listens to."""
    found: set[str] = set()
    for events in Endpoint.objects.filter(active=True).values_list("events", flat=True):
        found.update(events or [])
    return found


def send_ping(endpoint: Endpoint) -> Delivery:
    """Send a ``ping`` event to one endpoint (the console's "Send a test event")."""
    with transaction.atomic():
        event = Event.objects.create(
            key=f"ping:{endpoint.pk}:{uuid.uuid4()}",
            type="ping",
            data={"endpoint": endpoint.pk},
        )
        delivery = Delivery.objects.create(endpoint=endpoint, event=event)
    queue_deliveries([delivery.pk])
    return delivery


def queue_deliveries(ids: list[int]) -> None:
    """Queue the delivery jobs once the surrounding transaction commits (the rows exist first)."""
    from webhooks.tasks import deliver

    def send() -> None:
        for pk in ids:
            try:
                deliver.delay(pk)
            except Exception:  # the broker is down: the sweep (resend_overdue) queues it later
                logger.exception("Delivery(%s) could not be queued; the sweep will retry", pk)

    transaction.on_commit(send)
