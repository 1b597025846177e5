"""The work that follows stored submissions, done for many submissions at once.

What follows a submission: complete its HIT once every slot holds submitted work, run the heuristic QC
the page did not run, grade a screening quiz, a syllabus HIT's known-answer questions or an answer to a
gold or attention item, emit the ``submission.received`` (and ``batch.completed``) webhook events, and
set ``followed_up_at`` last.
The jobs in :mod:`crowd.followup_tasks` call :func:`follow_up` with one submission (the sweep's and
the per-submission job) or with every pending submission of the batches a look holds (:func:`pending`,
the batched job); the steps shared by the submissions run once (one read, one UPDATE completing the
HITs, one UPDATE marking them, one check for webhook listeners, one batch-completion check per batch).

Everything here is idempotent: a submission done twice (a retried job, the sweep and a drain racing)
is stored the same, and its webhook events are emitted once per key. A step that fails for one
submission leaves only that one unmarked, for the sweep to queue again on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from annotation.models import HIT, Assignment, QAPair

logger = logging.getLogger(__name__)

#: At most this many submissions per look of the batched follow-up; the next look takes the rest.
DRAIN_LIMIT = 500


def _summary(assignment_id: int) -> dict[str, Any]:
    return {"assignment": assignment_id, "pairs": 0, "flagged": 0}


def owed(since: datetime) -> Any:
    """Submissions submitted at or after ``since`` that no job has followed up yet: what the partial
    index ``assignment_followup_owed`` holds, the batched follow-up's whole work list."""
    return Assignment.objects.filter(submitted_at__gte=since, followed_up_at__isnull=True)


def pending(batch_ids: Iterable[int], since: datetime, limit: int = DRAIN_LIMIT) -> dict[int, int]:
    """The batches' submissions submitted at or after ``since`` that no job has marked yet, oldest first
    (at most ``limit``): assignment id -> its batch's id.

    Older ones are the sweep's (:func:`crowd.services.followups.requeue_lost_followups`), which queues
    each on its own: a submission whose follow-up keeps failing is never retried by every drain.
    """
    return dict(
        owed(since)
        .filter(hit__batch_id__in=list(batch_ids))
        .order_by("submitted_at", "pk")
        .values_list("pk", "hit__batch_id")[:limit]
    )


def follow_up(assignment_ids: Iterable[int], pending_only: bool = False) -> dict[int, dict[str, Any]]:
    """Follow up the given submissions; returns each one's summary (ids, QC counts, grades).

    Ids of deleted assignments are skipped (their summary says 0 pairs). With ``pending_only``,
    submissions already followed up are skipped too and left out of the result, which then holds only
    the submissions this call took up: the batched job reads its ids before it works, and a run of the
    batch that overlapped it (see :func:`crowd.services.followups.draining`) may have done them since.
    A submission whose own step (QC, quiz or gold grading) raises is logged, left unmarked and its
    summary says ``failed``; the others go on.
    """
    from annotation.hits import handler_for

    ids = list(dict.fromkeys(assignment_ids))
    summaries = {pk: _summary(pk) for pk in ids}
    assignments = Assignment.objects.filter(pk__in=ids)
    if pending_only:
        assignments = assignments.filter(followed_up_at__isnull=True)
    rows = list(
        assignments.values(
            "pk", "hit_id", "hit__status", "hit__batch_id", "hit__batch__kind", "hit__qa_pair_id"
        )
    )
    if pending_only:
        summaries = {row["pk"]: summaries[row["pk"]] for row in rows}
    if not rows:
        return summaries
    open_hits = {row["hit_id"] for row in rows if row["hit__status"] == HIT.Status.OPEN}
    if open_hits:
        HIT.objects.filter(pk__in=open_hits).complete_done()
    done: list[int] = []
    for row in rows:
        try:
            summaries[row["pk"]].update(_own_steps(row, handler_for(row["hit__batch__kind"])))
        except Exception:  # noqa: BLE001 - one submission's failure must not hold up the others
            logger.exception("the follow-up of Assignment(%s) failed; the sweep queues it again", row["pk"])
            summaries[row["pk"]]["failed"] = True
            continue
        done.append(row["pk"])
    if not done:
        return summaries
    Assignment.objects.filter(pk__in=done).update(followed_up_at=timezone.now())
    _emit_events(done, summaries, {row["hit__batch_id"] for row in rows})
    return summaries


def _own_steps(row: dict[str, Any], handler: Any) -> dict[str, Any]:
    """QC, quiz grade and gold grade of one submission (each only where its kind asks for it)."""
    assignment_id = row["pk"]
    summary: dict[str, Any] = {}
    if handler.runs_qc and not handler.qc_at_submit:
        from filters.services import qc_queryset

        pairs = QAPair.objects.filter(
            Q(pk=row["hit__qa_pair_id"]) if row["hit__qa_pair_id"] else Q(assignment=assignment_id)
        )
        results = qc_queryset(pairs)
        summary.update(pairs=len(results), flagged=sum(1 for r in results if r["flags"]))
    if handler.has_quiz or handler.gold_quiz:
        from annotation.screening.grader import grade_screening_assignment

        grade = grade_screening_assignment(
            Assignment.objects.select_related("hit__batch").get(pk=assignment_id)
        )
        if handler.has_quiz:
            summary["quiz"] = grade.score_label if grade is not None else None
        elif grade is not None:  # a syllabus QA HIT's known-answer questions count as gold answers
            from crowd.services.gold import grade_quiz_assignment

            summary["gold"] = grade_quiz_assignment(grade)
    if handler.serves_gold:
        from crowd.services.gold import grade_assignment

        graded = grade_assignment(assignment_id)
        if graded is not None:
            summary["gold"] = graded
    return summary


def _emit_events(done: list[int], summaries: dict[int, dict[str, Any]], batch_ids: set[int]) -> None:
    """``submission.received`` per submission (read only when a webhook listens) and
    ``batch.completed`` per batch once its last HIT is done."""
    from crowd.services import events
    from webhooks.events import subscribed_types
    from webhooks.models import EventType

    wanted = subscribed_types()
    if EventType.SUBMISSION_RECEIVED in wanted:
        for pk in done:
            events.submission_received(pk, summaries[pk])
    if EventType.BATCH_COMPLETED in wanted:
        for batch_id in sorted(batch_ids):
            events.batch_completed_if_done(batch_id)
