"""The crowd events sent to webhooks: a submission, a review decision, a batch's end, a budget stop.

Each builds its payload from stored rows (ids, counts and the worker's pseudonym: never a platform id)
and emits it once per key through :func:`webhooks.events.emit`, so the job or sync that calls it may run
again without a second event.
"""

from __future__ import annotations

from typing import Any, Optional

from annotation.models import HIT, Assignment, Batch
from webhooks.events import emit
from webhooks.models import EventType


def _batch(batch: Batch) -> dict[str, Any]:
    return {
        "id": batch.pk,
        "name": batch.name,
        "kind": batch.kind,
        "provider": batch.provider,
        "status": batch.status,
    }


def _assignment(assignment: Assignment) -> dict[str, Any]:
    return {
        "id": assignment.pk,
        "hit": assignment.hit_id,
        "batch": assignment.hit.batch_id,
        "worker": assignment.worker.pseudonym,
        "status": assignment.status,
        "submitted_at": assignment.submitted_at.isoformat() if assignment.submitted_at else None,
    }


def submission_received(assignment_id: int, summary: dict[str, Any]) -> None:
    """``submission.received`` for a submitted assignment, with the follow-up job's QC counts."""
    assignment = Assignment.objects.select_related("hit", "worker").filter(pk=assignment_id).first()
    if assignment is None or assignment.submitted_at is None:
        return
    data = {
        "assignment": _assignment(assignment),
        "qc": {"pairs": summary.get("pairs", 0), "flagged": summary.get("flagged", 0)},
    }
    emit(EventType.SUBMISSION_RECEIVED, f"submission.received:{assignment.pk}", data)


def assignment_decided(assignment: Assignment) -> None:
    """``assignment.approved`` or ``assignment.rejected`` after a review decision."""
    assignment = Assignment.objects.select_related("hit", "worker").get(pk=assignment.pk)
    kinds = {
        Assignment.Status.APPROVED: EventType.ASSIGNMENT_APPROVED,
        Assignment.Status.REJECTED: EventType.ASSIGNMENT_REJECTED,
    }
    kind = kinds.get(assignment.status)
    if kind is not None:
        emit(kind, f"{kind.value}:{assignment.pk}", {"assignment": _assignment(assignment)})


def batch_completed_if_done(batch_id: int) -> None:
    """``batch.completed`` once a batch is closed, or once none of its HITs is open any more."""
    batch = Batch.objects.filter(pk=batch_id).first()
    if batch is None:
        return
    hits = HIT.objects.filter(batch=batch)
    closed = batch.status == Batch.Status.COMPLETED
    if not closed and (not hits.exists() or hits.filter(status=HIT.Status.OPEN).exists()):
        return
    data = {
        "batch": _batch(batch),
        "hits": hits.count(),
        "submitted": Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False).count(),
    }
    emit(EventType.BATCH_COMPLETED, f"batch.completed:{batch.pk}", data)


def budget_reached(
    batch: Batch, spent_cents: int, trigger: str = "stopped", refused_cents: Optional[int] = None
) -> None:
    """``budget.reached`` once per batch and cap, from whichever comes first.

    Args:
        batch: the batch whose cap was reached.
        spent_cents: what it has cost so far, fees included.
        trigger: ``"stopped"`` (enforce_budget stopped the batch) or ``"payment_refused"`` (a bonus was
            refused because it would pass the cap).
        refused_cents: the refused payment's cost with fees (``payment_refused`` only).

    The key is the batch and its cap, not the trigger: a stop after a refusal (or a second refused bonus,
    say each row of a bulk payout) adds no event, while raising the cap makes a new reach possible.
    """
    data: dict[str, Any] = {
        "batch": _batch(batch),
        "budget_cap_cents": batch.budget_cap_cents,
        "spent_cents": spent_cents,
        "currency": batch.currency,
        "trigger": trigger,
    }
    if refused_cents is not None:
        data["refused_cents"] = refused_cents
    emit(EventType.BUDGET_REACHED, f"budget.reached:{batch.pk}:{batch.budget_cap_cents}", data)
