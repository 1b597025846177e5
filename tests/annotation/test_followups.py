"""Which follow-ups the sweep counts as lost: every submission older than the time limit that its job
has not marked ``followed_up_at``; none within the time limit, none the job marked, none older than
the sweep's window."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Batch
from crowd.services import followups
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


def _submitted(batch: Batch, name: str, minutes_ago: float, followed_up: bool = False) -> Assignment:
    at = timezone.now() - timedelta(minutes=minutes_ago)
    status = Assignment.Status.SUBMITTED
    return make_assignment(
        batch=batch,
        worker=make_worker(name),
        status=status,
        submitted_at=at,
        followed_up_at=at + timedelta(seconds=1) if followed_up else None,
    )


def test_sweep__requeues_the_submissions_no_job_marked(
    queued: list[int],
    batch: Batch,
    settings,  # noqa: ANN001
) -> None:
    settings.CROWDQA_FOLLOWUP_TIME_LIMIT = 600
    missing = _submitted(batch, "missing", 30)
    also_missing = _submitted(batch, "also-missing", 15)
    _submitted(batch, "done", 30, followed_up=True)
    _submitted(batch, "fresh", 1)  # its message may still be waiting in the queue
    _submitted(batch, "ancient", 60 * 24 * 3)  # outside the sweep's window

    assert followups.requeue_lost_followups()["assignments"] == sorted([missing.pk, also_missing.pk])
    assert sorted(queued) == sorted([missing.pk, also_missing.pk])


def test_after_submission__marks_the_submission_and_a_rerun_changes_nothing(batch: Batch) -> None:
    from annotation.models import HIT
    from crowd.followup_tasks import after_submission

    assignment = _submitted(batch, "w", 5)
    after_submission.run(assignment.pk)
    assignment.refresh_from_db()
    first = assignment.followed_up_at
    assert first is not None
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED
    after_submission.run(assignment.pk)  # a retried or re-queued job
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED
    assert after_submission.run(10**9)["pairs"] == 0  # a deleted submission is nothing to do


def test_after_submission__stores_no_result_row() -> None:
    from crowd.followup_tasks import after_submission

    assert after_submission.ignore_result is True
    assert after_submission.track_started is False
