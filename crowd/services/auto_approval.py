"""Automatic approval of submitted work nobody reviewed within a batch's delay.

A batch launched with ``Batch.options["auto_approve_seconds"]`` promises its workers a decision within
that time (MTurk is told the same delay as ``AutoApprovalDelayInSeconds`` when the batch is published,
:func:`crowd.services.publishing.auto_approval`). The periodic task ``crowd.tasks.auto_approve_overdue``
approves each overdue submission through the reviewers' own path
(:func:`crowd.services.review.approve_assignment`: locally with its reward row first, then on the
platform), so a platform that approved it already answers "already approved" and nothing is paid twice.
Only work still waiting is approved: a rejection made meanwhile stands (checked under the row lock).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Optional

from django.db.models import Min, QuerySet
from django.utils import timezone

from annotation.models import Assignment, Batch
from crowd.providers.errors import ProviderError
from crowd.services.ledger import LedgerError
from crowd.services.review import ReviewError, approve_assignment

logger = logging.getLogger(__name__)

OPTION = "auto_approve_seconds"
MARK = "auto_approved_at"
"""``Assignment.platform_meta`` key: when crowdqa approved the assignment automatically."""
FEEDBACK = "Approved automatically: the review period of this batch ended."
PER_RUN = 500
"""Most submissions approved in one periodic run; the next run goes on where this one stopped."""


def delay_of(batch: Batch) -> Optional[timedelta]:
    """The batch's auto-approval delay, or None when its work waits for a person."""
    seconds = (batch.options or {}).get(OPTION)
    return None if seconds is None else timedelta(seconds=int(seconds))


def describe(seconds: int) -> str:
    """A delay in words: ``3 days``, ``36 hours``, ``90 minutes``."""
    if seconds and seconds % 86400 == 0:
        n, unit = seconds // 86400, "day"
    elif seconds and seconds % 3600 == 0:
        n, unit = seconds // 3600, "hour"
    else:
        n, unit = round(seconds / 60), "minute"
    return f"{n} {unit}{'' if n == 1 else 's'}"


def waiting(batch: Batch) -> QuerySet[Assignment]:
    """The batch's submissions still waiting for a review."""
    return Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.SUBMITTED)


def overdue(batch: Batch, now: Optional[datetime] = None) -> QuerySet[Assignment]:
    """The batch's waiting submissions whose delay has run out (none without a delay)."""
    delay = delay_of(batch)
    if delay is None:
        return Assignment.objects.none()
    cutoff = (now or timezone.now()) - delay
    return waiting(batch).filter(submitted_at__lte=cutoff).order_by("submitted_at", "pk")


def summary(batch: Batch) -> Optional[dict[str, Any]]:
    """What the batch page says about automatic approval, or None when the batch has no delay.

    Keys: ``delay`` (words), ``waiting`` (submissions waiting), ``next_at`` (when the oldest waiting one
    is approved automatically), ``approved`` (submissions approved automatically so far).
    """
    delay = delay_of(batch)
    if delay is None:
        return None
    oldest = waiting(batch).aggregate(oldest=Min("submitted_at"))["oldest"]
    return {
        "delay": describe(int(delay.total_seconds())),
        "waiting": waiting(batch).count(),
        "next_at": oldest + delay if oldest else None,
        "approved": Assignment.objects.filter(
            hit__batch=batch, status=Assignment.Status.APPROVED, platform_meta__has_key=MARK
        ).count(),
    }


@dataclass
class Outcome:
    """One run's result: approved assignment ids and the ones left waiting, with why."""

    approved: list[int] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"approved": self.approved, "skipped": self.skipped}


def _mark(assignment: Assignment) -> None:
    """Note on the assignment that the approval was automatic (the batch page counts these)."""
    assignment.refresh_from_db(fields=["platform_meta"])
    meta = {**assignment.platform_meta, MARK: timezone.now().isoformat()}
    Assignment.objects.filter(pk=assignment.pk).update(platform_meta=meta)


def approve_overdue(now: Optional[datetime] = None, limit: int = PER_RUN) -> Outcome:
    """Approve every overdue submission of every batch with a delay (at most ``limit`` in one run).

    A submission the decision path refuses (no work on file, the platform disagrees or is down, it was
    reviewed meanwhile) stays as it is, is logged and is listed in ``skipped``; the next run tries again.
    """
    outcome = Outcome()
    for batch in Batch.objects.filter(options__has_key=OPTION).order_by("pk"):
        for assignment in overdue(batch, now)[: max(0, limit - len(outcome.approved))]:
            try:
                approve_assignment(assignment, feedback=FEEDBACK, unreviewed_only=True)
            except (ReviewError, LedgerError, ProviderError) as exc:
                logger.warning("Assignment(%s) not approved automatically: %s", assignment.pk, exc)
                outcome.skipped.append({"assignment": assignment.pk, "reason": str(exc)})
                continue
            _mark(assignment)
            outcome.approved.append(assignment.pk)
            logger.info("Assignment(%s) approved automatically (Batch %s)", assignment.pk, batch.pk)
        if len(outcome.approved) >= limit:
            break
    return outcome
