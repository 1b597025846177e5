"""Background jobs (imports, filters, exports): status, progress and result, for pages to show."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from django.db import models
from django.utils import timezone


class Job(models.Model):
    """A long-running piece of work (import, filter, QC, export, training) with progress and result.

    Celery tasks load their Job, report progress here and store the result here, so a page can show
    pending / running / failed / done explicitly and a retry can see what was already done.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        FAILED = "failed", "Failed"
        DONE = "done", "Done"

    kind = models.CharField(max_length=100, db_index=True)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=20, default="default")
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Job({self.pk}) {self.kind} {self.status}"

    def start(self, total: Optional[int] = None) -> None:
        """Mark running (again, on a retry) and reset the progress counter."""
        self.status = self.Status.RUNNING
        self.started_at = timezone.now()
        self.progress_done = 0
        self.progress_total = total
        self.error = ""
        self.save(update_fields=["status", "started_at", "progress_done", "progress_total", "error"])

    start.alters_data = True  # type: ignore[attr-defined]

    def report(self, done: int, total: Optional[int] = None) -> None:
        """Record progress; cheap enough to call every few hundred items."""
        self.progress_done = done
        if total is not None:
            self.progress_total = total
        self.save(update_fields=["progress_done", "progress_total"])

    def finish(self, result: dict[str, Any]) -> None:
        """Store the result and mark done."""
        self.status = self.Status.DONE
        self.result = result
        self.finished_at = timezone.now()
        self.save(update_fields=["status", "result", "finished_at"])

    finish.alters_data = True  # type: ignore[attr-defined]

    def fail(self, error: str) -> None:
        """Store the error message and mark failed."""
        self.status = self.Status.FAILED
        self.error = error
        self.finished_at = timezone.now()
        self.save(update_fields=["status", "error", "finished_at"])

    fail.alters_data = True  # type: ignore[attr-defined]

    def run(self, work: Callable[[Job], dict[str, Any]], total: Optional[int] = None) -> dict[str, Any]:
        """Run ``work(job)`` as this Job: mark it running, store what it returns and mark it done.

        On any exception the Job is marked failed with the error (so a page never shows a dead job as
        running) and the exception propagates, so Celery records the task as failed too. Re-running a
        failed Job starts it afresh; ``work`` itself must be safe to repeat.
        """
        self.start(total=total)
        try:
            result = work(self)
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}")
            raise
        self.finish(result)
        return {"job": self.pk, "status": self.status}

    run.alters_data = True  # type: ignore[attr-defined]
