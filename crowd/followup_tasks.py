"""Celery jobs that follow a worker's submission: QC, HIT completion, screening grade, stage-2 HITs.

They sit in crowd because they use the apps above the data model (filters' QC, the distractor ranker,
publishing on the platform). Their Celery names keep the ``annotation.tasks.`` prefix they were first
queued and scheduled under, so messages already in a queue and the beat schedule still find them.
"""

from __future__ import annotations

import logging
from typing import Any

from config.jobs import shared_task

logger = logging.getLogger(__name__)


@shared_task(
    name="annotation.tasks.after_submission", acks_late=True, ignore_result=True, track_started=False
)
def after_submission(assignment_id: int) -> dict[str, Any]:
    """Follow up one submission (:func:`crowd.services.after_submission.follow_up`): complete the HIT,
    run the heuristic QC the page did not run, grade a screening quiz or an answer to a gold or
    attention item (and act on the worker's standing: :mod:`crowd.services.gold`); idempotent.

    The submission itself is already committed when this runs, so a failure here loses nothing: the
    sweep re-queues a job whose submission has no ``followed_up_at`` yet
    (:mod:`crowd.services.followups`), which the follow-up sets last. That marker, not a result row,
    says the job ran, so the job writes no result (``ignore_result``) and no started row.

    It completes the HIT once every slot holds submitted work. That is bookkeeping the worker does not
    wait for (claims count a HIT's live slots themselves, so a full HIT is never handed out while it
    still says open), and only here is it reliable: a submission's own transaction cannot see another
    submission committing at the same moment, while each job runs after its submission committed, so
    the later of two racing submissions sees both. Platform syncs complete HITs too.
    """
    from crowd.services.after_submission import follow_up

    return follow_up([assignment_id])[assignment_id]


@shared_task(name="crowd.followup_tasks.dispatch_followups", ignore_result=True, track_started=False)
def dispatch_followups() -> list[dict[str, Any]]:
    """Follow up every pending submission of every batch in one pass, under each batch's lock (periodic,
    every ``CROWDQA_FOLLOWUP_BATCH_SECONDS`` with batching: the batched form of
    :func:`after_submission`; idempotent). See :func:`crowd.services.followups.dispatch`."""
    from crowd.services.followups import dispatch

    return dispatch()


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
