"""Celery tasks of the crowd app: thin wrappers around ``crowd.services.sync`` (idempotent, acks_late)."""

from __future__ import annotations

import logging
from typing import Any, Optional

from celery import shared_task

from annotation.models import Batch
from crowd.providers.errors import RateLimitedError, TransientError
from crowd.services.qualifications import retry_pending_grants
from crowd.services.sync import SyncError, batches_to_sync, sync_batch

logger = logging.getLogger(__name__)


@shared_task(
    name="crowd.tasks.sync_batch",
    acks_late=True,
    autoretry_for=(RateLimitedError, TransientError),
    retry_backoff=True,
    max_retries=5,
)
def sync_batch_task(batch_id: int) -> dict[str, Any]:
    """Sync one batch with its platform; returns the counts."""
    return sync_batch(Batch.objects.get(pk=batch_id))


@shared_task(name="crowd.tasks.sync_batches", acks_late=True)
def sync_batches(batch_id: Optional[int] = None) -> dict[str, Any]:
    """Sync every published platform batch (the periodic job), or one; one failure does not stop others.

    The periodic run also retries pending qualification grants of screening batches it did not sync
    (closed or cancelled ones): ``grants`` counts them.
    """
    ids = [batch_id] if batch_id is not None else batches_to_sync()
    results: dict[str, Any] = {"batches": [], "failed": []}
    for pk in ids:
        try:
            results["batches"].append(sync_batch(Batch.objects.get(pk=pk)))
        except SyncError as exc:
            logger.warning("%s", exc)
            results["failed"].append({"batch": pk, "error": str(exc)})
    if batch_id is None:
        results["grants"] = retry_pending_grants(exclude_batches=tuple(ids))
    return results
