"""Review of submitted work on the local side: approve or reject an assignment and its QA pairs.

Approving SciQ stage-1 work accepts its question and queues the stage-2 validation HIT (papers/
sciq-crowdsourcing-mcq.txt 3.2); approving stage-2 work accepts the validated pair with its chosen
distractors. Telling a crowd platform and paying go through ``crowd.services`` which calls these
functions once the platform has agreed.
"""

from __future__ import annotations

import logging

from django.db import transaction

from annotation.hits import handler_for
from annotation.models import Assignment, QAPair

logger = logging.getLogger(__name__)


class AlreadyReviewed(Exception):
    """An approval meant for unreviewed work found the assignment decided already (under its row lock)."""


def approve(assignment: Assignment, unreviewed_only: bool = False) -> bool:
    """Approve a submitted (or previously rejected) assignment; returns False when it already was.

    Args:
        assignment: the assignment.
        unreviewed_only: approve only work still waiting for review (an automatic approval): a
            rejection that happened meanwhile stands.

    Raises:
        IllegalTransition: when the assignment is not submitted or rejected.
        AlreadyReviewed: ``unreviewed_only`` and the assignment is not submitted any more.
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("hit__batch").get(pk=assignment.pk)
        if unreviewed_only and locked.status != Assignment.Status.SUBMITTED:
            raise AlreadyReviewed(f"Assignment({assignment.pk}) is {locked.status} already")
        if locked.status == Assignment.Status.APPROVED:
            return False
        locked.approve()
        pairs = QAPair.objects.filter(assignment=locked)
        pairs.update(status=QAPair.Status.ACCEPTED)
        if handler_for(locked.hit.batch.kind).stage2_kind is not None:
            ids = list(pairs.values_list("pk", flat=True))
            transaction.on_commit(lambda: _queue_validation_hits(ids))
    logger.info("approved Assignment(%s)", assignment.pk)
    assignment.refresh_from_db()
    return True


def reject(assignment: Assignment, reason: str) -> bool:
    """Reject a submitted assignment with a reason the worker reads; returns False when it already was.

    Raises:
        ValidationError: for an empty reason.
        IllegalTransition: when the assignment is not submitted.
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.status == Assignment.Status.REJECTED:
            return False
        locked.reject(reason)
        QAPair.objects.filter(assignment=locked).update(status=QAPair.Status.REJECTED)
    logger.info("rejected Assignment(%s)", assignment.pk)
    assignment.refresh_from_db()
    return True


def _queue_validation_hits(pair_ids: list[int]) -> None:
    from crowd.services.followups import queue_validation_hit

    for pair_id in pair_ids:
        queue_validation_hit(pair_id)
