"""Celery tasks of the crowd app: thin wrappers around ``crowd.services.sync`` (idempotent, acks_late)."""

from __future__ import annotations

import logging
import time
from typing import Any, Optional

from annotation.models import Batch
from config.jobs import shared_task
from crowd.providers.errors import RateLimitedError, TransientError
from crowd.services.qualifications import retry_pending_grants
from crowd.services.sync import SyncError, TransientSyncError, batches_to_sync, sync_batch

logger = logging.getLogger(__name__)


@shared_task(
    name="crowd.tasks.sync_batch",
    acks_late=True,
    autoretry_for=(RateLimitedError, TransientError, TransientSyncError),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=5,
)
def sync_batch_task(batch_id: int) -> dict[str, Any]:
    """Sync one batch with its platform (webhooks queue it); returns the counts.

    A platform that cannot be reached or throttles (``TransientSyncError``) is retried with
    exponential backoff; other failures fail the task with their message.
    """
    return sync_batch(Batch.objects.get(pk=batch_id))


SYNC_ATTEMPTS = 3
SYNC_BACKOFF_SECONDS = 1.0


def _sync_with_backoff(pk: int) -> dict[str, Any]:
    """Sync one batch, retrying a transient platform failure after 1 s, then 2 s (then it fails)."""
    for attempt in range(SYNC_ATTEMPTS):
        try:
            return sync_batch(Batch.objects.get(pk=pk))
        except TransientSyncError as exc:
            if attempt == SYNC_ATTEMPTS - 1:
                raise
            delay = SYNC_BACKOFF_SECONDS * 2**attempt
            logger.warning("%s; retrying in %.0f s", exc, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")


@shared_task(name="crowd.tasks.sync_batches", acks_late=True)
def sync_batches(batch_id: Optional[int] = None) -> dict[str, Any]:
    """Sync every published platform batch (the periodic job), or one; one failure does not stop others.

    The periodic run also retries pending qualification grants of screening batches it did not sync
    (closed or cancelled ones): ``grants`` counts them. ``needs_attention`` lists the batches the
    platform no longer knows (``{"batch", "reason"}``), which a person must look at.
    """
    ids = [batch_id] if batch_id is not None else batches_to_sync()
    results: dict[str, Any] = {"batches": [], "failed": [], "needs_attention": []}
    for pk in ids:
        try:
            counts = _sync_with_backoff(pk)
            results["batches"].append(counts)
            if counts.get("needs_attention"):
                results["needs_attention"].append({"batch": pk, "reason": counts["needs_attention"]})
        except SyncError as exc:
            logger.warning("%s", exc)
            results["failed"].append({"batch": pk, "error": str(exc)})
    if batch_id is None:
        results["grants"] = retry_pending_grants(exclude_batches=tuple(ids))
    return results


@shared_task(name="crowd.tasks.auto_approve_overdue", acks_late=True)
def auto_approve_overdue() -> dict[str, Any]:
    """Approve submitted work nobody reviewed within its batch's auto-approval delay (the periodic job).

    Safe to run twice at once or again after a lost run: each approval goes through the idempotent
    decision path and only touches work still waiting (:mod:`crowd.services.auto_approval`).
    """
    from crowd.services.auto_approval import approve_overdue

    return approve_overdue().to_dict()
