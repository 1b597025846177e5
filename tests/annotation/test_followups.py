"""Which follow-ups the sweep counts as lost: none with a finished result, none still within the time
limit, and every one with no result or a STARTED result older than the limit."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_results.models import TaskResult

from annotation.models import Assignment, Batch
from annotation.services import followups
from tests.factories import make_assignment, make_batch, make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sent: list[int] = []
    monkeypatch.setattr(followups, "queue_after_submission", lambda pk, connection=None: sent.append(pk))
    return sent


@pytest.fixture
def batch() -> Batch:
    return make_batch()


def _submitted(batch: Batch, name: str, minutes_ago: float) -> Assignment:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    status = Assignment.Status.SUBMITTED
    return make_assignment(batch=batch, worker=make_worker(name), status=status, submitted_at=at)


def _result(assignment: Assignment, status: str, minutes_ago: float) -> None:
    task_id = followups.after_submission_id(assignment.pk)
    TaskResult.objects.create(task_id=task_id, task_name="annotation.tasks.after_submission", status=status)
    TaskResult.objects.filter(task_id=task_id).update(
        date_done=timezone.now() - timedelta(minutes=minutes_ago)
    )


def test_sweep__requeues_missing_and_stale_started_only(
    queued: list[int],
    batch: Batch,
    settings,  # noqa: ANN001
) -> None:
    settings.CROWDQA_FOLLOWUP_TIME_LIMIT = 600
    missing = _submitted(batch, "missing", 30)
    stale = _submitted(batch, "stale", 30)
    _result(stale, "STARTED", 20)
    running = _submitted(batch, "running", 30)
    _result(running, "STARTED", 2)
    done = _submitted(batch, "done", 30)
    _result(done, "SUCCESS", 25)
    failed = _submitted(batch, "failed", 30)
    _result(failed, "FAILURE", 25)
    _submitted(batch, "fresh", 1)  # its message may still be waiting in the queue
    _submitted(batch, "ancient", 60 * 24 * 3)  # older than the result backend keeps results

    assert followups.requeue_lost_followups()["assignments"] == sorted([missing.pk, stale.pk])
    assert sorted(queued) == sorted([missing.pk, stale.pk])
