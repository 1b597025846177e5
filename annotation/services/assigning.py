"""Hand out assignments: the local crowd's "next HIT", MTurk's accepted assignment, Prolific's arrival.

Every claim runs in one transaction that locks the HIT row it fills (``SELECT ... FOR UPDATE SKIP
LOCKED`` on PostgreSQL; SQLite runs write transactions one at a time because the settings open them
``IMMEDIATE``), and re-counts the HIT's live slots after taking the lock. So two workers asking at the
same instant never get the same slot, and since SciQ stage-1 HITs never share a passage, never the same
passage (Turkle's race, turkle#79, was an unevaluated ``select_for_update``: here the locked row is
fetched).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Optional

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch, QAPair
from annotation.question_types import PAIRS_PER_SYLLABUS_HIT
from crowd.models import Worker

logger = logging.getLogger(__name__)


class ClaimRefused(Exception):
    """The worker cannot get work from this batch now; the message is shown to them."""


def _expiry(batch: Batch) -> Any:
    return timezone.now() + timedelta(minutes=batch.time_limit_minutes)


def current_assignment(batch: Batch, worker: Worker) -> Optional[Assignment]:
    """The worker's unfinished, unexpired assignment in ``batch``, if any (resumed instead of a new one)."""
    for assignment in Assignment.objects.filter(
        hit__batch=batch, worker=worker, status=Assignment.Status.ACCEPTED
    ).select_related("hit"):
        if not assignment.expire_if_overdue():
            return assignment
    return None


def _pairs_per_assignment(batch: Batch) -> int:
    if batch.kind in (Batch.Kind.SYLLABUS_QA, Batch.Kind.SCREENING):
        return PAIRS_PER_SYLLABUS_HIT
    return 1 if batch.kind == Batch.Kind.SCIQ_QUESTION else 0


def check_can_work(batch: Batch, worker: Worker) -> None:
    """Raise :class:`ClaimRefused` when the worker may not take any HIT of ``batch``.

    Checks the batch status, blocks, the required qualification (``options["required_qualification"]``,
    granted by a screening batch), the per-worker total cap (SyllabusQA) and the budget cap.
    """
    if batch.status != Batch.Status.PUBLISHED:
        raise ClaimRefused(f"This batch is {batch.get_status_display().lower()}; no work is handed out.")
    if worker.blocked:
        raise ClaimRefused("Your account cannot take HITs at the moment.")
    required = batch.options.get("required_qualification")
    if required and not worker.qualifications.filter(name=required, value__gte=1).exists():
        raise ClaimRefused("This batch is open to workers who passed its screening task.")
    per_hit = _pairs_per_assignment(batch)
    if batch.max_pairs_per_worker and per_hit:
        written = QAPair.objects.filter(assignment__worker=worker, assignment__hit__batch=batch).count()
        held = Assignment.objects.filter(
            hit__batch=batch, worker=worker, status=Assignment.Status.ACCEPTED
        ).count()
        if written + (held + 1) * per_hit > batch.max_pairs_per_worker:
            raise ClaimRefused("You have reached the maximum number of QA pairs for this batch. Thank you!")
    if batch.budget_cap_cents is not None:
        from crowd.services.lifecycle import budget_allows_one_more

        if not budget_allows_one_more(batch):
            raise ClaimRefused("This batch has used its budget; no more work is handed out.")


def _document_cap_allows(batch: Batch, worker: Worker, hit: HIT) -> bool:
    cap = batch.max_pairs_per_worker_per_document
    if not cap or hit.document_id is None:
        return True
    written = QAPair.objects.filter(assignment__worker=worker, document=hit.document_id).count()
    return written + _pairs_per_assignment(batch) <= cap


class _Busy(Exception):
    """The HIT row is locked by another claim right now (PostgreSQL ``SKIP LOCKED`` passed it over)."""


def _lock_open_slot(hit_id: int, wait: bool) -> Optional[HIT]:
    """Lock ``HIT(hit_id)`` and return it when it still has a free slot; None when taken or closed.

    Raises:
        _Busy: when ``wait`` is False and another transaction holds the row.
    """
    # of=("self",) and no model ordering: HIT's default ordering joins Batch, and FOR UPDATE SKIP LOCKED
    # would then lock the batch row too, so every other worker skipped every HIT while one claimed.
    hit = (
        HIT.objects.select_for_update(skip_locked=not wait, of=("self",))
        .filter(pk=hit_id)
        .order_by("pk")
        .first()
    )
    if hit is None:
        if not wait and HIT.objects.filter(pk=hit_id).exists():
            raise _Busy(hit_id)
        return None
    if hit.status != HIT.Status.OPEN or hit.live_assignment_count() >= hit.max_assignments:
        return None
    return hit


def _new_assignment(
    hit: HIT, worker: Worker, batch: Batch, platform_ref: str, meta: Optional[dict]
) -> Assignment:
    """Create the worker's assignment on ``hit`` with the batch's time limit (caller holds the HIT lock)."""
    assignment = Assignment.objects.create(
        hit=hit, worker=worker, expires_at=_expiry(batch), platform_ref=platform_ref, platform_meta=meta or {}
    )
    logger.info("Worker(%s) accepted HIT(%s) as Assignment(%s)", worker.pk, hit.pk, assignment.pk)
    return assignment


def claim_next(
    batch: Batch, worker: Worker, platform_ref: str = "", meta: Optional[dict] = None
) -> Assignment:
    """Give ``worker`` their current assignment in ``batch`` or a new one on the next free HIT.

    Args:
        batch: a published batch.
        worker: the worker asking.
        platform_ref: the platform's id of this assignment (Prolific's SESSION_ID).
        meta: platform details kept on the assignment (study id, return URL...).

    Returns:
        The assignment (resumed or new).

    Raises:
        ClaimRefused: when the worker may not work on the batch or no HIT is left for them.
    """
    existing = current_assignment(batch, worker)
    if existing is not None:
        return existing
    check_can_work(batch, worker)
    Assignment.expire_all_overdue(batch)  # reclaim slots whose time limit has passed
    candidates = HIT.objects.available_for(worker).filter(batch=batch).order_by("position")
    # First pass skips HITs another claim has locked; a second pass waits for those few, since the other
    # claim may give up on its HIT (capped, or it was full) and "no HIT left" must be true when said.
    busy: list[int] = []
    for wait, hit_ids in ((False, list(candidates.values_list("pk", flat=True))), (True, busy)):
        for hit_id in hit_ids:
            try:
                with transaction.atomic():
                    hit = _lock_open_slot(hit_id, wait)
                    if hit is None or not _document_cap_allows(batch, worker, hit):
                        continue
                    return _new_assignment(hit, worker, batch, platform_ref, meta)
            except _Busy:
                busy.append(hit_id)
            except IntegrityError:
                # The same worker claimed this HIT in a parallel request (double click): resume it.
                resumed = current_assignment(batch, worker)
                if resumed is not None:
                    return resumed
    raise ClaimRefused("There is no HIT left for you in this batch right now. Thank you!")


def claim_platform_assignment(
    batch: Batch, hit: HIT, worker: Worker, platform_ref: str, meta: Optional[dict] = None
) -> Assignment:
    """Record the assignment a platform gave the worker on a known HIT (MTurk's accept).

    The platform decides who works on which HIT; crowdqa mirrors it. A worker who returned the HIT and
    accepted it again gets their old assignment back, draft included.

    Raises:
        ClaimRefused: when the batch is closed or the worker is blocked.
    """
    if batch.status not in (Batch.Status.PUBLISHED, Batch.Status.PAUSED):
        raise ClaimRefused(f"This batch is {batch.get_status_display().lower()}; no work is handed out.")
    if worker.blocked:
        raise ClaimRefused("Your account cannot take HITs at the moment.")
    with transaction.atomic():
        HIT.objects.select_for_update(of=("self",)).filter(pk=hit.pk).order_by("pk").first()
        assignment = Assignment.objects.select_for_update().filter(hit=hit, worker=worker).first()
        if assignment is None:
            assignment = _new_assignment(hit, worker, batch, platform_ref, meta)
        elif assignment.status in (Assignment.Status.RETURNED, Assignment.Status.EXPIRED):
            assignment.reopen(_expiry(batch), platform_ref)
        if meta:
            assignment.platform_meta = {**assignment.platform_meta, **meta}
            assignment.save(update_fields=["platform_meta"])
    return assignment


def return_assignment(assignment: Assignment) -> None:
    """The worker gives the HIT back; its slot is free again (the draft is kept for a reopen)."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        locked.return_()
    logger.info("Worker(%s) returned Assignment(%s)", assignment.worker_id, assignment.pk)


def available_batches_for(worker: Worker) -> list[tuple[Batch, int]]:
    """Published local batches with at least one HIT ``worker`` could take, and how many."""
    counts: dict[int, int] = {}
    for batch_id in (
        HIT.objects.available_for(worker)
        .filter(batch__provider=Batch.Provider.LOCAL)
        .values_list("batch", flat=True)
    ):
        counts[batch_id] = counts.get(batch_id, 0) + 1
    batches = Batch.objects.filter(pk__in=counts).order_by("created")
    return [(b, counts[b.pk]) for b in batches]
