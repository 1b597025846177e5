"""Celery tasks of the filters app (thin: load the Job, call the service, store the result)."""

from __future__ import annotations

from typing import Any

from annotation.models import Corpus, Job
from config.jobs import shared_task
from filters.sentence_rules import FilterOptions
from filters.services import filter_corpus


@shared_task(name="filters.tasks.filter_passages", acks_late=True)
def filter_passages(job_id: int) -> dict[str, Any]:
    """Run the sentence filter over a corpus (params: corpus, min_accepted_sentences, refilter).

    Safe to run twice: verdicts already stored are kept unless ``refilter`` is set. Any error marks the
    Job failed with the message.
    """

    def work(job: Job) -> dict[str, Any]:
        params = job.params
        corpus = Corpus.objects.get(name=params["corpus"])
        options = FilterOptions(min_accepted_sentences=int(params.get("min_accepted_sentences", 1)))
        return filter_corpus(corpus, options, bool(params.get("refilter")), progress=job.report)

    return Job.objects.get(pk=job_id).run(work)
