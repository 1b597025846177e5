"""Celery tasks of the filters app (thin: load the Job, call the service, store the result)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from annotation.models import Corpus, Job, QAPair
from filters.sentence_rules import FilterOptions
from filters.services import filter_corpus, qc_queryset


@shared_task(name="filters.tasks.filter_passages", acks_late=True)
def filter_passages(job_id: int) -> dict[str, Any]:
    """Run the sentence filter over a corpus (params: corpus, min_accepted_sentences, refilter).

    Safe to run twice: verdicts already stored are kept unless ``refilter`` is set.
    """
    job = Job.objects.get(pk=job_id)
    job.start()
    params = job.params
    corpus = Corpus.objects.get(name=params["corpus"])
    options = FilterOptions(min_accepted_sentences=int(params.get("min_accepted_sentences", 1)))
    result = filter_corpus(corpus, options, bool(params.get("refilter")), progress=job.report)
    job.finish(result)
    return {"job": job.pk, "status": job.status}


@shared_task(name="filters.tasks.qc_pairs", acks_late=True)
def qc_pairs(pair_ids: list[int]) -> int:
    """QC the given QA pairs (e.g. one submission's) and store their flags; idempotent."""
    results = qc_queryset(QAPair.objects.filter(pk__in=pair_ids))
    return len(results)
