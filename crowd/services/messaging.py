"""Messages from researchers to workers: on the worker's platform, or in a local worker's inbox.

A batch's workers are messaged through its platform (``notify_batch_workers``); one worker is messaged
in the frame of a batch they worked on, so a platform that needs the study (Prolific) has it. The local
crowd's provider keeps the message as a :class:`crowd.models.WorkerMessage`, shown on the worker's home
page, where opening it marks it read.
"""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils import timezone

from annotation.models import Batch
from crowd.models import Worker, WorkerMessage
from crowd.services.review import ReviewError, notify_batch_workers

INBOX_SIZE = 20
"""Messages shown on a worker's home page (the newest)."""


def message_worker(worker: Worker, batch: Batch, subject: str, message: str) -> None:
    """Message one worker of ``batch`` on the batch's platform (a local worker: in their inbox).

    Raises:
        ReviewError: the worker did no work in the batch, an empty or too long text, or the platform
            refused.
    """
    if not batch.hits.filter(assignments__worker=worker).exists():
        raise ReviewError(f"Worker {worker.pseudonym} did no work in batch {batch.pk}")
    notify_batch_workers(batch, subject, message, workers=[worker])


def inbox(worker: Worker) -> list[WorkerMessage]:
    """The worker's newest messages; the unread ones among them are marked read (the page shows them)."""
    shown = list(worker.messages.select_related("batch")[:INBOX_SIZE])
    unread = [m.pk for m in shown if m.read_at is None]
    if unread:
        WorkerMessage.objects.filter(pk__in=unread).update(read_at=timezone.now())
    return shown


def unread(worker: Worker) -> QuerySet[WorkerMessage]:
    """The worker's messages not shown to them yet."""
    return worker.messages.filter(read_at__isnull=True)
