"""Platform work on a batch that takes a while (publish, sync, pay), recorded for the batch page to show.

Why: publishing 1,000 HITs, syncing 1,000 submissions or approving a batch runs for minutes in a
command, a Celery worker or the request that pressed Publish; the researcher looking at the batch page
should see what such a job has done, what is left, and why it stopped if it failed. Each batch keeps
one ``annotation.Job`` row per kind (``batch_publish``, ``batch_sync``, ``batch_pay``; ``params``
names the batch), restarted by each run, so the periodic sync adds no row per run. The batch page's
live progress (``console.progress``) reads them.

A process killed outright leaves its job ``running``; the page shows when it last moved, and the next
run of the same kind takes the row over.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Optional

from django.utils import timezone

from annotation.models import Job

KINDS: dict[str, str] = {
    "publish": "Publishing on the platform",
    "sync": "Syncing with the platform",
    "pay": "Approving and paying",
}
"""Job kinds shown on the batch page, with their labels."""


def _job(batch_id: int, kind: str) -> Job:
    name = f"batch_{kind}"
    job = Job.objects.filter(kind=name, params__batch=batch_id).order_by("-created").first()
    return job or Job.objects.create(kind=name, params={"batch": batch_id})


class Tracker:
    """Progress of one run of a batch job: ``report`` as work is done, ``result`` kept when it ends."""

    def __init__(self, job: Job, unit: str) -> None:
        self.job = job
        self.unit = unit
        self.result: dict[str, Any] = {}

    def report(self, done: int, total: Optional[int] = None) -> None:
        """Record ``done`` of ``total`` (None: not known yet) units of work."""
        self.job.report(done, total)


@contextmanager
def batch_job(batch_id: int, kind: str, unit: str, total: Optional[int] = None) -> Iterator[Tracker]:
    """Run a block as the batch's ``kind`` job: running while it runs, failed with the error if it raises.

    Args:
        batch_id: the batch.
        kind: one of :data:`KINDS`.
        unit: what ``done`` counts ("HITs", "submissions"...), shown on the page.
        total: how many units there are, when known now.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown batch job kind {kind!r}; expected one of {sorted(KINDS)}")
    job = _job(batch_id, kind)
    job.params = {"batch": batch_id, "unit": unit}
    job.save(update_fields=["params"])
    job.start(total=total)
    tracker = Tracker(job, unit)
    try:
        yield tracker
    except BaseException as exc:
        job.fail(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        raise
    job.finish(tracker.result)


def jobs_of(batch_id: int) -> list[dict[str, Any]]:
    """The batch's jobs for its page: kind, status, done / total / unit, error, times (newest first)."""
    rows = Job.objects.filter(kind__in=[f"batch_{k}" for k in KINDS], params__batch=batch_id).order_by(
        "-started_at"
    )
    now = timezone.now()
    result = []
    for job in rows:
        kind = job.kind.removeprefix("batch_")
        left = None if job.progress_total is None else max(0, job.progress_total - job.progress_done)
        result.append(
            {
                "kind": kind,
                "label": KINDS[kind],
                "status": job.status,
                "status_label": job.get_status_display(),
                "done": job.progress_done,
                "total": job.progress_total,
                "left": left,
                "unit": str(job.params.get("unit") or "items"),
                "error": job.error,
                "started": job.started_at.isoformat(timespec="seconds") if job.started_at else "",
                "minutes_ago": (
                    None
                    if job.started_at is None
                    else max(0, round((now - job.started_at).total_seconds() / 60))
                ),
            }
        )
    return result


def any_running(batch_id: int) -> bool:
    """True while one of the batch's jobs runs (its page keeps polling)."""
    return Job.objects.filter(
        kind__in=[f"batch_{k}" for k in KINDS], params__batch=batch_id, status=Job.Status.RUNNING
    ).exists()
