"""Celery tasks of the exports app (thin: the service does the work and records it on the Job)."""

from __future__ import annotations

from typing import Any

from annotation.models import Job
from config.jobs import shared_task
from exports.services.exporting import run_export


class ExportFailed(RuntimeError):
    """An export job failed; the message is the error stored on the job."""


@shared_task(name="exports.tasks.export_release", acks_late=True)
def export_release(job_id: int) -> dict[str, Any]:
    """Build and register the release a Job describes; safe to run twice (see exports.services.exporting).

    Raises:
        ExportFailed: the job failed (its error is on the job), so Celery records the task as failed too.
    """
    job = run_export(job_id)
    if job.status == Job.Status.FAILED:
        raise ExportFailed(f"Job({job.pk}): {job.error}")
    return {"job": job.pk, "status": job.status, "release": (job.result or {}).get("release_id")}
