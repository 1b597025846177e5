"""Celery jobs that follow a worker's submission: QC, HIT completion, screening grade, stage-2 HITs.

They sit in crowd because they use the apps above the data model (filters' QC, the distractor ranker,
publishing on the platform). Their Celery names keep the ``annotation.tasks.`` prefix they were first
queued and scheduled under, so messages already in a queue and the beat schedule still find them.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.utils import timezone

from annotation.models import Assignment

logger = logging.getLogger(__name__)


@shared_task(
    name="annotation.tasks.after_submission", acks_late=True, ignore_result=True, track_started=False
)
def after_submission(assignment_id: int) -> dict[str, Any]:
    """Complete the HIT, run the heuristic QC the page did not run, grade a screening quiz or an answer
    to a gold or attention item (and act on the worker's standing: :mod:`crowd.services.gold`);
    idempotent.

    The submission itself is already committed when this runs, so a failure here loses nothing: the
    sweep re-queues a job whose submission has no ``followed_up_at`` yet
    (:mod:`crowd.services.followups`), which this job sets last. That marker, not a result row,
    says the job ran, so the job writes no result (``ignore_result``) and no started row.

    It completes the HIT once every slot holds submitted work. That is bookkeeping the worker does not
    wait for (claims count a HIT's live slots themselves, so a full HIT is never handed out while it
    still says open), and only here is it reliable: a submission's own transaction cannot see another
    submission committing at the same moment, while each job runs after its submission committed, so
    the later of two racing submissions sees both. Platform syncs complete HITs too.

    One read brings what the job needs (the HIT, its status, the batch's kind and the pair a stage-2
    HIT validates); a kind whose page already ran the whole QC and stored its flags
    (``handler.qc_at_submit``) is not checked again.
    """
    from annotation.hits import handler_for
    from annotation.models import HIT, QAPair
    from filters.services import qc_queryset

    row = (
        Assignment.objects.filter(pk=assignment_id)
        .values("hit_id", "hit__status", "hit__batch_id", "hit__batch__kind", "hit__qa_pair_id")
        .first()
    )
    if row is None:
        return {"assignment": assignment_id, "pairs": 0, "flagged": 0}
    if row["hit__status"] == HIT.Status.OPEN:
        HIT.objects.filter(pk=row["hit_id"]).complete_done()
    handler = handler_for(row["hit__batch__kind"])
    summary: dict[str, Any] = {"assignment": assignment_id, "pairs": 0, "flagged": 0}
    if handler.runs_qc and not handler.qc_at_submit:
        pairs = QAPair.objects.filter(assignment=assignment_id)
        if row["hit__qa_pair_id"]:
            pairs = QAPair.objects.filter(pk=row["hit__qa_pair_id"])
        results = qc_queryset(pairs)
        summary.update(pairs=len(results), flagged=sum(1 for r in results if r["flags"]))
    if handler.has_quiz:
        from annotation.screening.grader import grade_screening_assignment

        grade = grade_screening_assignment(
            Assignment.objects.select_related("hit__batch").get(pk=assignment_id)
        )
        summary["quiz"] = grade.score_label if grade is not None else None
    if handler.serves_gold:
        from crowd.services.gold import grade_assignment

        graded = grade_assignment(assignment_id)
        if graded is not None:
            summary["gold"] = graded
    Assignment.objects.filter(pk=assignment_id).update(followed_up_at=timezone.now())
    from crowd.services import events

    events.submission_received(assignment_id, summary)
    events.batch_completed_if_done(row["hit__batch_id"])
    return summary


@shared_task(name="annotation.tasks.create_validation_hit", acks_late=True)
def create_validation_hit(pair_id: int) -> dict[str, Any]:
    """Create the SciQ stage-2 HIT (with its six suggestions) of an accepted question; idempotent.

    The HIT is committed first, then put on the stage-2 batch's platform (MTurk / Prolific); when the
    platform refuses or the worker dies in between, the next sync publishes it (``publish_pending_hits``).
    """
    from annotation.models import QAPair
    from crowd.services.lifecycle import LifecycleError
    from crowd.services.publishing import publish_pending_hits
    from crowd.services.validation_hits import on_question_accepted

    pair = QAPair.objects.select_related("assignment__hit__batch").get(pk=pair_id)
    hit = on_question_accepted(pair)
    result: dict[str, Any] = {"pair": pair_id, "hit": hit.pk, "batch": hit.batch_id}
    try:
        result["published"] = publish_pending_hits(hit.batch)["published"]
    except LifecycleError as exc:
        logger.warning(
            "QAPair(%s) stage-2 HIT(%s) not published yet (sync retries): %s", pair_id, hit.pk, exc
        )
        result["publish_error"] = str(exc)
    return result


@shared_task(name="annotation.tasks.requeue_lost_followups", acks_late=True)
def requeue_lost_followups() -> dict[str, Any]:
    """Re-queue the follow-ups of submissions that a killed worker lost (periodic; idempotent)."""
    from crowd.services.followups import requeue_lost_followups as sweep

    return sweep()
