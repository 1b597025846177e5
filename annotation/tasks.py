"""Celery tasks of the annotation app (thin: load, call a service, save, return ids and counts)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db.models import Count

from annotation.models import Assignment, Corpus

logger = logging.getLogger(__name__)


@shared_task(name="annotation.tasks.corpus_stats", acks_late=True)
def corpus_stats(corpus_id: int) -> dict[str, Any]:
    """Count a corpus's documents, passages and QA pairs by type (read-only, so safe to retry)."""
    corpus = Corpus.objects.get(pk=corpus_id)
    by_type = dict(corpus.qa_pairs.order_by().values_list("question_type").annotate(n=Count("id")))
    return {
        "corpus": corpus.name,
        "documents": corpus.documents.count(),
        "passages": corpus.passages.count(),
        "qa_pairs": sum(by_type.values()),
        "by_type": by_type,
    }


@shared_task(name="annotation.tasks.expire_overdue_assignments", acks_late=True)
def expire_overdue_assignments() -> int:
    """Reclaim assignments past their time limit (periodic; idempotent)."""
    count = Assignment.expire_all_overdue()
    if count:
        logger.info("expired %d overdue assignment(s)", count)
    return count


@shared_task(name="annotation.tasks.after_submission", acks_late=True)
def after_submission(assignment_id: int) -> dict[str, Any]:
    """Run heuristic QC on a stored submission's QA pairs (and grade a screening quiz); idempotent.

    The submission itself is already committed when this runs, so a failure here loses nothing: the
    pairs simply stay unflagged until the next ``run_qc --batch``.

    It first completes the HIT once every slot holds submitted work. That is bookkeeping the worker
    does not wait for (claims count a HIT's live slots themselves, so a full HIT is never handed out
    while it still says open), and only here is it reliable: a submission's own transaction cannot see
    another submission committing at the same moment, while each job runs after its submission
    committed, so the later of two racing submissions sees both. A job lost with its worker is
    re-queued by the follow-up sweep, and platform syncs complete HITs too.
    """
    from annotation.hits import handler_for
    from annotation.models import QAPair
    from filters.services import qc_queryset

    assignment = Assignment.objects.select_related("hit__batch").get(pk=assignment_id)
    assignment.hit.complete_if_done()
    handler = handler_for(assignment.hit.batch.kind)
    if not handler.runs_qc:
        return {"assignment": assignment_id, "pairs": 0, "flagged": 0}
    pairs = QAPair.objects.filter(assignment=assignment)
    if assignment.hit.qa_pair_id:
        pairs = QAPair.objects.filter(pk=assignment.hit.qa_pair_id)
    results = qc_queryset(pairs)
    flagged = sum(1 for r in results if r["flags"])
    summary: dict[str, Any] = {"assignment": assignment_id, "pairs": len(results), "flagged": flagged}
    if handler.has_quiz:
        from annotation.screening.grader import grade_screening_assignment

        grade = grade_screening_assignment(assignment)
        summary["quiz"] = grade.score_label if grade is not None else None
    return summary


@shared_task(name="annotation.tasks.create_validation_hit", acks_late=True)
def create_validation_hit(pair_id: int) -> dict[str, Any]:
    """Create the SciQ stage-2 HIT (with its six suggestions) of an accepted question; idempotent.

    The HIT is committed first, then put on the stage-2 batch's platform (MTurk / Prolific); when the
    platform refuses or the worker dies in between, the next sync publishes it (``publish_pending_hits``).
    """
    from annotation.models import QAPair
    from annotation.services.validation_hits import on_question_accepted
    from crowd.services.lifecycle import LifecycleError, publish_pending_hits

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
    from annotation.services.followups import requeue_lost_followups as sweep

    return sweep()
