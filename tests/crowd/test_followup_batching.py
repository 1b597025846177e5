"""Submissions followed up a batch at a time: a submit queues nothing, the dispatcher queues one run per
batch owed a follow-up (none while one is queued), a run that drops its mark before it reads (so none
is left behind), one run per batch at a time, and a failing submission that holds up no other."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch, Corpus
from annotation.services.batches import BatchSpec, create_batch
from crowd.followup_tasks import after_submissions
from crowd.models import Consent
from crowd.services import after_submission as service
from crowd.services import followups
from tests.factories import make_assignment, make_batch, make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Oxidants are compounds that are capable of accepting electrons from other substances.",
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


@pytest.fixture(autouse=True)
def batching(settings: Any) -> Any:
    settings.CROWDQA_FOLLOWUP_BATCHING = True
    settings.CROWDQA_FOLLOWUP_TIME_LIMIT = 600
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    messages: list[list[int]] = []
    monkeypatch.setattr(after_submissions, "apply_async", lambda args, **kw: messages.append(args))
    return messages


def _submitted(batch: Batch, name: str, minutes_ago: float = 0.0, **kw: Any) -> Assignment:
    return make_assignment(
        batch=batch,
        worker=make_worker(name),
        status=Assignment.Status.SUBMITTED,
        submitted_at=timezone.now() - timedelta(minutes=minutes_ago),
        **kw,
    )


def _sciq_batch(name: str = "b") -> Batch:
    corpus = Corpus.objects.filter(name="tb").first() or make_textbook("tb", PASSAGES)
    return make_batch(corpus, name=name, kind=Batch.Kind.SCIQ_QUESTION, status=Batch.Status.PUBLISHED)


def test_submissions_through_the_page__queue_nothing__the_dispatcher_one_run_while_queued(
    client: Client,
    sent: list[list[int]],
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from crowd.followup_tasks import after_submission

    single: list[Any] = []
    monkeypatch.setattr(after_submission, "apply_async", lambda *a, **kw: single.append(a))
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", limit=1, assignments=3))
    batch.publish()
    assignments = []
    for name in ("a", "b", "c"):
        assignment = claim_next(batch, make_worker(name))
        Consent.objects.create(worker=assignment.worker, batch=batch)
        assignments.append(assignment)

    def submit(assignment: Assignment) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                hit_links.url_for(assignment), {"passage": "none", "reject_reason": "lists only"}
            )
        assert b"Thank you" in response.content

    submit(assignments[0])
    submit(assignments[1])
    # The page told neither the broker nor the cache.
    assert sent == [] and single == [] and cache.get(followups._queued_key(batch.pk)) is None
    assert followups.dispatch() == [batch.pk]
    assert followups.dispatch() == []  # its run is still queued
    assert sent == [[batch.pk]]
    assert followups.drain(batch.pk)["submissions"] == 2
    assert followups.dispatch() == []  # nothing owed
    submit(assignments[2])  # after the run read: the next look queues a new run
    assert followups.dispatch() == [batch.pk]
    assert sent == [[batch.pk], [batch.pk]]
    assert followups.drain(batch.pk)["submissions"] == 1
    assert not Assignment.objects.filter(followed_up_at__isnull=True).exists()
    assert HIT.objects.get(batch=batch).status == HIT.Status.COMPLETED
    assert single == []


def test_dispatch__one_run_per_batch_owed__not_the_sweeps_nor_the_done(sent: list[list[int]]) -> None:
    batch, quiet, other, idle = (_sciq_batch(n) for n in ("b", "quiet", "other", "idle"))
    stalled = _submitted(batch, "stalled", minutes_ago=2)  # a killed run left it
    _submitted(batch, "fresh")
    _submitted(quiet, "fresh2")
    _submitted(other, "done", followed_up_at=timezone.now())
    _submitted(idle, "lost", minutes_ago=11)  # past the time limit: the sweep's, on its own job

    assert followups.owed_batches() == sorted([batch.pk, quiet.pk])
    assert followups.dispatch() == sorted([batch.pk, quiet.pk])
    assert sorted(sent) == sorted([[batch.pk], [quiet.pk]])
    followups.drain(batch.pk)
    assert Assignment.objects.get(pk=stalled.pk).followed_up_at is not None
    assert followups.owed_batches() == [quiet.pk]


def test_drain__follows_up_the_batchs_pending_submissions_only(sent: list[list[int]]) -> None:
    batch, other = _sciq_batch("b"), _sciq_batch("other")
    fresh = [_submitted(batch, f"w{i}") for i in range(3)]
    done = _submitted(batch, "done", followed_up_at=timezone.now())
    old = _submitted(batch, "old", minutes_ago=30)  # the sweep's, queued on its own
    elsewhere = _submitted(other, "elsewhere")

    assert followups.drain(batch.pk) == {"batch": batch.pk, "submissions": 3, "flagged": 0}
    marked = set(Assignment.objects.filter(followed_up_at__isnull=False).values_list("pk", flat=True))
    assert marked == {a.pk for a in fresh} | {done.pk}
    assert set(HIT.objects.filter(status=HIT.Status.COMPLETED).values_list("pk", flat=True)) == {
        a.hit_id for a in fresh
    }
    assert followups.drain(batch.pk)["submissions"] == 0  # a rerun finds nothing
    assert Assignment.objects.get(pk=old.pk).followed_up_at is None
    assert Assignment.objects.get(pk=elsewhere.pk).followed_up_at is None


def test_drain__a_failing_submission_holds_up_no_other(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _sciq_batch()
    good, bad = _submitted(batch, "good"), _submitted(batch, "bad")
    steps = service._own_steps

    def failing(row: dict[str, Any], handler: Any) -> dict[str, Any]:
        if row["pk"] == bad.pk:
            raise RuntimeError("boom")
        return steps(row, handler)

    monkeypatch.setattr(service, "_own_steps", failing)
    followups.drain(batch.pk)
    assert Assignment.objects.get(pk=good.pk).followed_up_at is not None
    assert Assignment.objects.get(pk=bad.pk).followed_up_at is None  # for the sweep


def test_drain__a_full_run_queues_the_next(monkeypatch: pytest.MonkeyPatch, sent: list[list[int]]) -> None:
    monkeypatch.setattr(service, "DRAIN_LIMIT", 2)
    batch = _sciq_batch()
    for i in range(3):
        _submitted(batch, f"w{i}")
    assert followups.drain(batch.pk)["submissions"] == 2
    assert sent == [[batch.pk]]
    assert followups.drain(batch.pk)["submissions"] == 1


def test_the_dispatcher_is_a_beat_job_of_the_batch_interval_only_with_batching(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    import config.settings as live

    monkeypatch.setenv("CROWDQA_FOLLOWUP_BATCH_SECONDS", "2.5")
    try:
        monkeypatch.setenv("CROWDQA_FOLLOWUP_BATCHING", "1")
        entry = importlib.reload(live).CELERY_BEAT_SCHEDULE["dispatch-followups"]
        assert entry == {
            "task": "crowd.followup_tasks.dispatch_followups",
            "schedule": 2.5,
            "options": {"expires": 2.5},
        }
        from celery import current_app

        assert entry["task"] in current_app.tasks
        monkeypatch.setenv("CROWDQA_FOLLOWUP_BATCHING", "0")
        assert "dispatch-followups" not in importlib.reload(live).CELERY_BEAT_SCHEDULE
    finally:
        monkeypatch.undo()
        importlib.reload(live)


def test_draining__one_run_per_batch_at_a_time() -> None:
    with followups.draining(1) as first:
        with followups.draining(1) as second, followups.draining(2) as other_batch:
            assert (first, second, other_batch) == (True, False, True)
    with followups.draining(1) as again:
        assert again


def test_after_submissions__a_run_that_finds_the_lock_held_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    batch = _sciq_batch()
    pending = _submitted(batch, "w")
    retried: list[float] = []

    class Retry(Exception):
        pass

    def retry(countdown: float) -> Exception:
        retried.append(countdown)
        return Retry()

    monkeypatch.setattr(after_submissions, "retry", retry)
    with followups.draining(batch.pk):
        with pytest.raises(Retry):
            after_submissions.run(batch.pk)
    assert retried and 0 < retried[0] <= 30
    assert Assignment.objects.get(pk=pending.pk).followed_up_at is None
    assert after_submissions.run(batch.pk)["submissions"] == 1


def test_without_batching__one_job_per_submission(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from crowd.followup_tasks import after_submission

    settings.CROWDQA_FOLLOWUP_BATCHING = False
    ids: list[Any] = []
    monkeypatch.setattr(after_submission, "apply_async", lambda args, **kw: ids.append((args, kw["task_id"])))
    followups.queue_after_submission(7)
    assert ids == [([7], "after_submission:7")]


def test_follow_up_pending_only__skips_what_another_run_marked() -> None:
    batch = _sciq_batch()
    done, fresh = _submitted(batch, "done"), _submitted(batch, "fresh")
    marked_at = timezone.now() - timedelta(seconds=5)
    Assignment.objects.filter(pk=done.pk).update(followed_up_at=marked_at)
    assert list(service.follow_up([done.pk, fresh.pk], pending_only=True)) == [fresh.pk]
    assert Assignment.objects.get(pk=done.pk).followed_up_at == marked_at  # not done again
    assert Assignment.objects.get(pk=fresh.pk).followed_up_at is not None
    assert set(service.follow_up([done.pk])) == {done.pk}  # the per-submission job redoes a retry


def test_sweep__queues_each_lost_submission_on_its_own(
    sent: list[list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crowd.followup_tasks import after_submission

    single: list[Any] = []
    monkeypatch.setattr(after_submission, "apply_async", lambda args, **kw: single.append(args))
    batch = _sciq_batch("b")
    _submitted(batch, "fresh")  # the dispatcher's
    lost = _submitted(batch, "lost", minutes_ago=11)  # past the time limit
    assert followups.requeue_lost_followups() == {"assignments": [lost.pk], "pairs": []}
    assert single == [[lost.pk]] and sent == []
