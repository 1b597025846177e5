"""Submissions followed up a batch at a time: a submit queues nothing, a look of the dispatcher follows up
every batch owed a follow-up in one pass (leaving a batch another look holds to that look), one look per
batch at a time, and a failing submission that holds up no other and is not retried every second."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch, Corpus
from annotation.services.batches import BatchSpec, create_batch
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
def single(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The per-submission jobs queued (``after_submission``)."""
    from crowd.followup_tasks import after_submission

    messages: list[list[int]] = []
    monkeypatch.setattr(after_submission, "apply_async", lambda args, **kw: messages.append(args))
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


def test_submissions_through_the_page__queue_nothing__a_look_follows_them_up(
    client: Client, single: list[list[int]], django_capture_on_commit_callbacks: Any
) -> None:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", limit=1, assignments=3))
    batch.publish()
    assignments = []
    for name in ("a", "b", "c"):
        assignment = claim_next(batch, make_worker(name))
        Consent.objects.create(worker=assignment.worker, batch=batch)
        assignments.append(assignment)

    def submit(assignment: Assignment) -> None:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            response = client.post(
                hit_links.url_for(assignment), {"passage": "none", "reject_reason": "lists only"}
            )
        assert b"Thank you" in response.content and callbacks  # the page's after-commit step ran

    submit(assignments[0])
    submit(assignments[1])
    assert single == []  # the page queued nothing
    assert followups.dispatch() == [{"batch": batch.pk, "submissions": 2, "flagged": 0, "failed": 0}]
    assert followups.dispatch() == []  # nothing owed
    submit(assignments[2])
    assert [r["submissions"] for r in followups.dispatch()] == [1]
    assert not Assignment.objects.filter(followed_up_at__isnull=True).exists()
    assert HIT.objects.get(batch=batch).status == HIT.Status.COMPLETED
    assert single == []


def test_dispatch__every_batch_owed__not_the_sweeps_nor_the_done__nor_one_another_look_holds() -> None:
    batch, quiet, other, idle, busy = (_sciq_batch(n) for n in ("b", "quiet", "other", "idle", "busy"))
    stalled = _submitted(batch, "stalled", minutes_ago=2)  # a killed look left it
    _submitted(batch, "fresh")
    _submitted(quiet, "fresh2")
    _submitted(other, "done", followed_up_at=timezone.now())
    _submitted(idle, "lost", minutes_ago=11)  # past the time limit: the sweep's, on its own job
    working = _submitted(busy, "working")

    assert followups.owed_batches() == sorted([batch.pk, quiet.pk, busy.pk])
    with followups.draining([busy.pk]):  # another look is on it
        done = followups.dispatch()
    assert {r["batch"]: r["submissions"] for r in done} == {batch.pk: 2, quiet.pk: 1}
    assert Assignment.objects.get(pk=stalled.pk).followed_up_at is not None
    assert Assignment.objects.get(pk=working.pk).followed_up_at is None
    assert followups.owed_batches() == [busy.pk]
    assert [r["batch"] for r in followups.dispatch()] == [busy.pk]
    assert followups.owed_batches() == []


def test_dispatch__many_batches_in_one_pass__the_statements_of_one() -> None:
    one = _sciq_batch("one")
    _submitted(one, "a")
    with CaptureQueriesContext(connection) as single:
        assert [r["submissions"] for r in followups.dispatch()] == [1]
    batches = [_sciq_batch(f"b{i}") for i in range(4)]
    for i, batch in enumerate(batches):
        _submitted(batch, f"w{i}")
        _submitted(batch, f"v{i}")
    with CaptureQueriesContext(connection) as many:
        done = followups.dispatch()
    assert done == [{"batch": b.pk, "submissions": 2, "flagged": 0, "failed": 0} for b in batches]
    assert len(many.captured_queries) == len(single.captured_queries)
    assert not Assignment.objects.filter(followed_up_at__isnull=True).exists()


def test_owed_batches__two_small_reads_whatever_the_hits(django_assert_num_queries: Any) -> None:
    batch = _sciq_batch()
    with django_assert_num_queries(1):
        assert followups.owed_batches() == []
    _submitted(batch, "w")
    with django_assert_num_queries(2) as captured:
        assert followups.owed_batches() == [batch.pk]
    assert "JOIN" not in captured.captured_queries[0]["sql"].upper()


def test_drain__follows_up_the_batchs_pending_submissions_only() -> None:
    batch, other = _sciq_batch("b"), _sciq_batch("other")
    fresh = [_submitted(batch, f"w{i}") for i in range(3)]
    done = _submitted(batch, "done", followed_up_at=timezone.now())
    old = _submitted(batch, "old", minutes_ago=30)  # the sweep's, queued on its own
    elsewhere = _submitted(other, "elsewhere")

    assert followups.drain([batch.pk]) == [{"batch": batch.pk, "submissions": 3, "flagged": 0, "failed": 0}]
    marked = set(Assignment.objects.filter(followed_up_at__isnull=False).values_list("pk", flat=True))
    assert marked == {a.pk for a in fresh} | {done.pk}
    assert set(HIT.objects.filter(status=HIT.Status.COMPLETED).values_list("pk", flat=True)) == {
        a.hit_id for a in fresh
    }
    assert followups.drain([batch.pk])[0]["submissions"] == 0  # a rerun finds nothing
    assert Assignment.objects.get(pk=old.pk).followed_up_at is None
    assert Assignment.objects.get(pk=elsewhere.pk).followed_up_at is None


def _failing(monkeypatch: pytest.MonkeyPatch, bad: Assignment) -> None:
    """Make the follow-up's own steps raise for ``bad`` only."""
    steps = service._own_steps

    def failing(row: dict[str, Any], handler: Any) -> dict[str, Any]:
        if row["pk"] == bad.pk:
            raise RuntimeError("boom")
        return steps(row, handler)

    monkeypatch.setattr(service, "_own_steps", failing)


def test_drain__a_failing_submission_holds_up_no_other__nor_is_retried_every_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batch = _sciq_batch()
    good, bad = _submitted(batch, "good"), _submitted(batch, "bad")
    _failing(monkeypatch, bad)
    assert [r["failed"] for r in followups.dispatch()] == [1]
    assert Assignment.objects.get(pk=good.pk).followed_up_at is not None
    assert Assignment.objects.get(pk=bad.pk).followed_up_at is None  # for the sweep
    # Still owed, but the next looks leave the batch alone a while rather than retry it every second.
    assert followups.owed_batches() == [batch.pk]
    assert followups.dispatch() == []
    cache.delete(followups._held_key(batch.pk))  # FAILED_HOLD_SECONDS later
    assert [r["failed"] for r in followups.dispatch()] == [1]


def test_dispatch__a_failing_submission_holds_off_its_batch_only(monkeypatch: pytest.MonkeyPatch) -> None:
    failing_batch, other = _sciq_batch("failing"), _sciq_batch("other")
    bad, good = _submitted(failing_batch, "bad"), _submitted(other, "good")
    _failing(monkeypatch, bad)
    assert followups.dispatch() == [
        {"batch": failing_batch.pk, "submissions": 1, "flagged": 0, "failed": 1},
        {"batch": other.pk, "submissions": 1, "flagged": 0, "failed": 0},
    ]
    assert Assignment.objects.get(pk=good.pk).followed_up_at is not None
    _submitted(other, "later")
    _submitted(failing_batch, "held")
    assert followups.dispatch() == [{"batch": other.pk, "submissions": 1, "flagged": 0, "failed": 0}]


def test_drain__a_full_run_leaves_the_rest_to_the_next_look(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "DRAIN_LIMIT", 2)
    batch = _sciq_batch()
    for i in range(3):
        _submitted(batch, f"w{i}")
    assert [r["submissions"] for r in followups.dispatch()] == [2]
    assert [r["submissions"] for r in followups.dispatch()] == [1]


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
    with followups.draining([1, 3]) as first:
        with followups.draining([3, 1, 2]) as second:
            assert (first, second) == ([1, 3], [2])
    with followups.draining([1]) as again:
        assert again == [1]


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


def test_sweep__queues_each_lost_submission_on_its_own(single: list[list[int]]) -> None:
    batch = _sciq_batch("b")
    _submitted(batch, "fresh")  # the dispatcher's
    lost = _submitted(batch, "lost", minutes_ago=11)  # past the time limit
    assert followups.requeue_lost_followups() == {"assignments": [lost.pk], "pairs": []}
    assert single == [[lost.pk]]
