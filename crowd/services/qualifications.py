"""Screening qualifications: granted locally at once, on the platform until it has accepted them.

Why: a worker who passed screening must be let into the main batches (SyllabusQA's screening
session): on MTurk through the screening batch's custom qualification, on Prolific through its
allow-list participant group. The approval that earns the grant has already happened on the platform,
so a failed grant call must neither undo nor fail it. The grant is recorded first (``Qualification``
with the platform's id and ``platform_synced`` False), then sent; a refusal or a lost answer leaves it
pending with the platform's message, and ``retry_pending_grants`` (run by sync) sends it again until the
platform accepts it. Both platforms' grant calls are idempotent, so a resend is harmless.
"""

from __future__ import annotations

import logging
from typing import Optional

from django.db.models import F

from annotation.models import Batch
from crowd.models import BatchPlatformState, Qualification, Worker
from crowd.providers import errors
from crowd.providers.traits import traits_for
from crowd.services.lifecycle import LifecycleError, provider_for

logger = logging.getLogger(__name__)


def screening_qualification_name(batch: Batch) -> str:
    """The local qualification a screening batch grants (``options["grants_qualification"]``)."""
    return str(batch.options.get("grants_qualification") or f"screened-{batch.pk}")


def platform_qualification_for(worker: Worker, batch: Batch) -> str:
    """The platform id the grant must also reach, or "" when it is local only.

    Only a worker of the batch's own platform can hold the batch's MTurk qualification / Prolific group.
    """
    platform_id = BatchPlatformState.of(batch.pk).screening_qualification
    if not platform_id or not traits_for(batch.provider).external or worker.platform != batch.provider:
        return ""
    return str(platform_id)


def qualify_worker(worker: Worker, batch: Batch) -> Qualification:
    """Give a worker the screening batch's qualification: locally now, on the platform when it accepts.

    Args:
        worker: the worker who passed screening.
        batch: the screening batch (its options name the platform qualification).

    Returns:
        The grant; ``platform_synced`` is False (with ``platform_error``) when the platform refused or did
        not answer: sync retries it, the caller need not.
    """
    platform_id = platform_qualification_for(worker, batch)
    qualification, _ = Qualification.objects.update_or_create(
        worker=worker,
        name=screening_qualification_name(batch),
        defaults={
            "value": 1,
            "batch": batch,
            "platform_qualification_id": platform_id,
            "platform_synced": not platform_id,
            "platform_error": "",
        },
    )
    if platform_id:
        push_grant(qualification)
    return qualification


def push_grant(qualification: Qualification) -> bool:
    """Send one pending grant to its platform; record success, or the failure for the next retry.

    Returns:
        True when the platform accepted it (now or before).
    """
    if qualification.platform_synced:
        return True
    batch = qualification.batch
    worker = qualification.worker
    if batch is None:
        _failed(qualification, "its screening batch was deleted; grant it on the platform by hand")
        return False
    try:
        provider_for(batch).qualify_worker(
            worker.platform_id, qualification.platform_qualification_id, qualification.value
        )
    except (errors.ProviderError, LifecycleError) as exc:
        _failed(qualification, f"{batch.provider}: {exc}")
        return False
    Qualification.objects.filter(pk=qualification.pk).update(
        platform_synced=True, platform_error="", platform_attempts=F("platform_attempts") + 1
    )
    qualification.refresh_from_db()
    logger.info(
        "Qualification(%s) %s granted to Worker(%s) on %s",
        qualification.pk,
        qualification.name,
        worker.pk,
        batch.provider,
    )
    return True


def _failed(qualification: Qualification, message: str) -> None:
    Qualification.objects.filter(pk=qualification.pk).update(
        platform_error=message[:2000], platform_attempts=F("platform_attempts") + 1
    )
    qualification.refresh_from_db()
    logger.warning(
        "Qualification(%s) %s for Worker(%s) is pending on the platform (attempt %d): %s",
        qualification.pk,
        qualification.name,
        qualification.worker_id,
        qualification.platform_attempts,
        message,
    )


def retry_pending_grants(
    batch: Optional[Batch] = None, exclude_batches: tuple[int, ...] = ()
) -> dict[str, int]:
    """Send every grant the platform has not accepted yet (sync runs this); safe to run any time.

    Args:
        batch: only the grants of this screening batch (default: all).
        exclude_batches: batch ids whose grants were already retried in this run.

    Returns:
        ``grants_synced`` (accepted now) and ``grants_pending`` (still refused).
    """
    pending = Qualification.objects.pending_on_platform().select_related("batch", "worker").order_by("pk")
    if batch is not None:
        pending = pending.filter(batch=batch)
    if exclude_batches:
        pending = pending.exclude(batch__in=exclude_batches)
    counts = {"grants_synced": 0, "grants_pending": 0}
    for qualification in pending:
        counts["grants_synced" if push_grant(qualification) else "grants_pending"] += 1
    return counts
