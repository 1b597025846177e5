"""Celery tasks of the annotation app (thin: load, call a service, save, return ids and counts).

The follow-up of a submission (QC, completion, stage-2 HITs) needs the apps above annotation and lives
in :mod:`crowd.followup_tasks`.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Count

from annotation.models import Assignment, Corpus
from config.jobs import shared_task

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


@shared_task(name="annotation.tasks.import_upload", acks_late=True)
def import_upload(job_id: int) -> dict[str, Any]:
    """Import the files of an upload job (annotation.services.uploads); the job records the outcome."""
    from annotation.services.uploads import run_upload

    job = run_upload(job_id)
    return {"job": job.pk, "status": job.status}
