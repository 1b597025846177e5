"""The work owed after a stored submission, queued under task ids derived from the data, and the sweep
that re-queues it when a killed worker lost it.

Two follow-ups exist: ``after_submission`` (HIT completion, QC of the pairs and the screening grade)
for every submitted assignment, and ``create_validation_hit`` (the SciQ stage-2 HIT) for every
accepted stage-1 question. Each is queued with a deterministic task id (``after_submission:<assignment>``,
``create_validation_hit:<pair>``). Neither broker protects a message whose worker dies: the embedded
file broker deletes a message as soon as a worker takes it, and Redis restores an unacked one only
after its visibility timeout. The sweep (a beat job) re-queues, once the submission or approval is
``CROWDQA_FOLLOWUP_TIME_LIMIT`` seconds old:

- every submission whose ``followed_up_at`` is still empty (the job sets it as its last step, and
  stores no result: it runs once per submission, so a result row per job would cost two writes that
  only this sweep would read);
- every accepted question with no stage-2 HIT whose job has no result row in the Celery result
  backend, or a ``STARTED`` one older than the time limit.

Both tasks are idempotent, so a follow-up that was merely slow and runs twice does no harm.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any, Optional

from django.conf import settings
from django.utils import timezone
from django_celery_results.models import TaskResult

from annotation.hits import kinds_where
from annotation.models import Assignment, QAPair

logger = logging.getLogger(__name__)

#: Submissions and approvals older than this are not swept: the result backend forgets results after a
#: day (``result_expires``), and a missing row must not look like a lost follow-up.
SWEEP_WINDOW = timedelta(hours=20)


def time_limit() -> timedelta:
    """How long a follow-up may be queued or running before the sweep counts it as lost."""
    return timedelta(seconds=float(settings.CROWDQA_FOLLOWUP_TIME_LIMIT))


def after_submission_id(assignment_id: int) -> str:
    return f"after_submission:{assignment_id}"


def validation_hit_id(pair_id: int) -> str:
    return f"create_validation_hit:{pair_id}"


def queue_after_submission(assignment_id: int, connection: Any = None) -> None:
    """Queue QC (and the screening grade) of a stored submission."""
    from crowd.followup_tasks import after_submission

    after_submission.apply_async(
        args=[assignment_id], task_id=after_submission_id(assignment_id), connection=connection
    )


def queue_validation_hit(pair_id: int, connection: Any = None) -> None:
    """Queue the creation of an accepted SciQ question's stage-2 HIT."""
    from crowd.followup_tasks import create_validation_hit

    create_validation_hit.apply_async(
        args=[pair_id], task_id=validation_hit_id(pair_id), connection=connection
    )


def _lost(task_ids: dict[str, int], now: Any) -> list[int]:
    """The objects whose follow-up has no result, or a STARTED one older than the time limit."""
    results = dict(TaskResult.objects.filter(task_id__in=list(task_ids)).values_list("task_id", "status"))
    stale = set(
        TaskResult.objects.filter(
            task_id__in=list(task_ids), status="STARTED", date_done__lt=now - time_limit()
        ).values_list("task_id", flat=True)
    )
    return [pk for task_id, pk in task_ids.items() if task_id not in results or task_id in stale]


def requeue_lost_followups(now: Optional[Any] = None, connection: Any = None) -> dict[str, list[int]]:
    """Re-queue every follow-up a killed worker lost; returns the assignment and pair ids re-queued."""
    now = now or timezone.now()
    settled = now - time_limit()
    assignments = list(
        Assignment.objects.filter(
            submitted_at__gte=now - SWEEP_WINDOW, submitted_at__lt=settled, followed_up_at__isnull=True
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    accepted = (
        QAPair.objects.filter(
            status=QAPair.Status.ACCEPTED,
            assignment__hit__batch__kind__in=kinds_where(lambda h: h.stage2_kind is not None),
            assignment__reviewed_at__gte=now - SWEEP_WINDOW,
            assignment__reviewed_at__lt=settled,
            validation_hits__isnull=True,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    pairs = _lost({validation_hit_id(pk): pk for pk in accepted}, now)
    for pk in assignments:
        queue_after_submission(pk, connection=connection)
    for pk in pairs:
        queue_validation_hit(pk, connection=connection)
    if assignments or pairs:
        logger.warning("re-queued lost follow-ups: assignments %s, stage-2 pairs %s", assignments, pairs)
    return {"assignments": assignments, "pairs": pairs}
