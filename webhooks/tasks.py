"""The delivery job and the sweep that re-queues deliveries whose job was lost (thin: see sending)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

from config.jobs import shared_task
from webhooks.models import Delivery
from webhooks.sending import attempt_delivery


@shared_task(name="webhooks.tasks.deliver", bind=True, acks_late=True, ignore_result=True, max_retries=None)
def deliver(self: Any, delivery_id: int) -> dict[str, Any]:
    """Attempt one delivery; on a transient failure run again after the backoff (safe to run twice:
    a delivery that is no longer pending, or that another job holds, is left alone)."""
    outcome = attempt_delivery(delivery_id)
    if outcome.retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=outcome.retry_in)
    return {"delivery": delivery_id, "sent": outcome.sent, "status": outcome.status}


@shared_task(name="webhooks.tasks.resend_overdue", acks_late=True, ignore_result=True)
def resend_overdue() -> int:
    """Queue again the pending deliveries whose next attempt is a minute late (a job lost with a worker,
    or queued when the broker was down); returns how many."""
    grace = timedelta(seconds=float(settings.WEBHOOK_SWEEP_GRACE_SECONDS))
    ids = list(Delivery.objects.overdue(grace).values_list("pk", flat=True)[:500])
    for pk in ids:
        deliver.delay(pk)
    return len(ids)
