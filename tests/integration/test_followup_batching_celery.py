"""Submissions followed up a batch at a time by a real Celery worker and a real Celery beat, with Redis as
the broker and the cache of the test process (the web pages), the worker and beat, so batching is on in
all of them: the pages queue nothing, beat's dispatcher sends a look every second, which follows up
every batch owed a follow-up.

Real SciQ passages and questions go through the HIT pages; every submission ends followed up exactly
once (marked, its HIT completed, its QC flags stored, one ``submission.received`` webhook delivered),
with far fewer batch runs than submissions. A worker killed with -9 while its look holds the batch's
lock frees it within ``RUNNING_LOCK_SECONDS`` (the look renews it while it works), so a fresh worker
follows up what the dead look left within seconds, whether or not anyone submits again, not after a
five-minute expiry or the sweep's time limit.

"Exactly once" is counted from the workers' own logs: each look logs how many submissions it followed
up in each batch, and their sum equals the number of submissions.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_client
from celery import signals
from django.core.cache import cache
from django.db import connection
from django.test import Client

from annotation.importers.mcq import MCQRow
from annotation.models import HIT, Assignment, Batch, QAPair
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent
from crowd.services import followups
from tests.annotation.test_sciq_hits import CORPUS, load_passages
from tests.factories import make_worker
from tests.integration.test_followup_sweep import _database_locked
from tests.integration.test_review_flow import _wait_for
from tests.webhook_receiver import Receiver
from webhooks.models import Endpoint
from worker import hit_links
from worker.assigning import claim_next

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

TASK = "crowd.followup_tasks.dispatch_followups"
#: An answer no SciQ passage contains: the page's QC flags it (answer_not_in_passage) and accepts it.
OFF_PASSAGE = "quasar dust"


@pytest.fixture
def shared_redis(
    redis_url: str, broker: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Redis as this process's broker and cache, as in a deployment; the workers get it from REDIS_URL."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url,
            "KEY_PREFIX": "crowdqa",
        }
    }
    settings.CROWDQA_FOLLOWUP_BATCHING = True
    settings.WEBHOOK_ALLOW_PRIVATE = True
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # the workers' logs are read while they run
    cache.clear()  # the test database of Redis: broker queues and marks of earlier tests
    yield redis_url
    cache.clear()


@pytest.fixture
def published() -> Iterator[list[str]]:
    """The names of the tasks this process (the web pages) sends, in order."""
    names: list[str] = []

    def sent(sender: str = "", **_: Any) -> None:
        names.append(sender)

    signals.before_task_publish.connect(sent, weak=False)
    yield names
    signals.before_task_publish.disconnect(sent)


def _batch(shared_data: Callable[[str], Path], hits: int) -> tuple[Batch, dict[str, MCQRow]]:
    """A published SciQ stage-1 batch of ``hits`` HITs of three real passages, one writer each."""
    records = load_passages(shared_data("sciq"), hits * 3)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=hits))
    batch.publish()
    return batch, records


def _submit(client: Client, batch: Batch, name: str, records: dict[str, MCQRow], index: int) -> Assignment:
    """A new worker claims a HIT and writes the real SciQ question of one of its passages (every fourth
    answer is one the passage lacks, which QC flags)."""
    worker = make_worker(name)
    assignment = claim_next(batch, worker)
    Consent.objects.get_or_create(worker=worker, batch=batch)
    passages = list(assignment.hit.passages.order_by("pk"))
    passage = passages[index % len(passages)]
    record = records[passage.text]
    answer = OFF_PASSAGE if index % 4 == 3 else record.answer
    response = client.post(
        hit_links.url_for(assignment),
        {"passage": str(passage.pk), "question": record.question, "answer": answer},
    )
    assert response.status_code == 200 and b"Thank you" in response.content, response.content[:800]
    return assignment


def _crowd_submits(batch: Batch, records: dict[str, MCQRow], writers: int, each: int) -> list[Assignment]:
    """``writers`` people submitting at the same time, ``each`` submissions one after another."""
    submitted: list[Assignment] = []
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        client = Client()
        try:
            for i in range(n * each, (n + 1) * each):
                submitted.append(_submit(client, batch, f"w{i}", records, i))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    return submitted


def _runs(logs: list[Path]) -> list[int]:
    """How many submissions each batch run of the finished looks followed up (none for a batch found
    done), from the workers' logs."""
    found: list[int] = []
    for log in logs:
        text = log.read_text() if log.exists() else ""
        for line in re.findall(rf"{TASK}\[[^\]]+\] succeeded in [^:]+: (.*)", text):
            found += [int(n) for n in re.findall(r"'submissions': (\d+)", line) if int(n)]
    return found


def _assert_each_followed_up_once(
    batch: Batch, submitted: list[Assignment], logs: list[Path], receiver: Receiver
) -> None:
    ids = {a.pk for a in submitted}
    assert not Assignment.objects.filter(pk__in=ids, followed_up_at__isnull=True).exists()
    hits = HIT.objects.filter(batch=batch, pk__in={a.hit_id for a in submitted})
    assert not hits.exclude(status=HIT.Status.COMPLETED).exists()
    # A look logs its counts once it has emitted the events, just after it marked the submissions.
    _wait_for(lambda: sum(_runs(logs)) >= len(ids), timeout=10)
    assert sum(_runs(logs)) == len(ids), _runs(logs)  # no submission followed up twice
    pairs = {p.assignment_id: p for p in QAPair.objects.filter(assignment__in=ids)}
    assert len(pairs) == len(ids)
    flagged = {pk for pk, p in pairs.items() if p.answer == OFF_PASSAGE}
    assert flagged and all(pairs[pk].qc_flags == ["answer_not_in_passage"] for pk in flagged)
    assert all(pairs[pk].qc_flags == [] for pk in ids - flagged)
    assert receiver.wait_for(len(ids), timeout=30)
    time.sleep(0.5)  # a second delivery of one event would come now
    bodies = [r.body.decode() for r in receiver.received]
    per_submission = [sum(f'"id": {pk},' in b or f'"id":{pk},' in b for b in bodies) for pk in sorted(ids)]
    assert len(bodies) == len(ids) and set(per_submission) == {1}
    assert all(r.signature_ok for r in receiver.received)


def test_batched_followups__a_real_worker_follows_up_each_submission_once(
    shared_redis: str,
    shared_data: Callable[[str], Path],
    celery_worker_process: Any,
    celery_beat_process: Any,
    receiver: Receiver,
    published: list[str],
    tmp_path: Path,
) -> None:
    batch, records = _batch(shared_data, hits=36)
    receiver.secret = Endpoint.objects.create(url=receiver.url, events=["submission.received"]).secret
    celery_worker_process("default", "batcher", shared_redis)
    log = tmp_path / "batcher.log"
    assert _wait_for(lambda: log.exists() and " ready." in log.read_text(), timeout=60)
    celery_beat_process(shared_redis)
    started = time.monotonic()
    submitted = _crowd_submits(batch, records, writers=4, each=9)
    submit_seconds = time.monotonic() - started

    done = lambda: not Assignment.objects.filter(followed_up_at__isnull=True).exists()  # noqa: E731
    assert _wait_for(done, timeout=60), (log.read_text() + (tmp_path / "beat.log").read_text())[-3000:]
    _assert_each_followed_up_once(batch, submitted, [log], receiver)
    assert published == []  # the pages queued nothing
    runs = _runs([log])
    looks = log.read_text().count(f"{TASK}[")
    print(f"36 submissions in {submit_seconds:.1f} s: {len(runs)} batch runs {runs}, {looks} looks")
    assert 1 <= len(runs) <= len(submitted) // 2, runs


@pytest.mark.parametrize("then", ["more submissions", "no more submissions"])
def test_batched_followups__a_run_killed_holding_the_lock__a_fresh_worker_resumes_within_seconds(
    then: str,
    shared_redis: str,
    shared_data: Callable[[str], Path],
    celery_worker_process: Any,
    celery_beat_process: Any,
    receiver: Receiver,
    published: list[str],
    tmp_path: Path,
) -> None:
    batch, records = _batch(shared_data, hits=24)
    receiver.secret = Endpoint.objects.create(url=receiver.url, events=["submission.received"]).secret
    client = Client()
    submitted = [_submit(client, batch, f"w{i}", records, i) for i in range(12)]  # no worker running
    assert published == []
    lock_key = cache.make_key(f"followups:running:{batch.pk}")
    locks = redis_client.Redis.from_url(shared_redis)

    # The look reads the owed submissions, takes the batch's lock and blocks on its first write (the
    # HITs' completion; a table lock that lets reads through, any write on SQLite).
    with _database_locked("annotation_hit IN EXCLUSIVE MODE"):
        celery_beat_process(shared_redis)
        doomed = celery_worker_process("default", "doomed", shared_redis)
        assert _wait_for(lambda: locks.exists(lock_key), timeout=60), "the look never took the batch's lock"
        time.sleep(2 * followups.RUNNING_LOCK_SECONDS / 3)  # its renewal keeps the lock past a third
        assert locks.pttl(lock_key) > 1000 * followups.RUNNING_LOCK_SECONDS / 2
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
        since = time.monotonic()  # the kill
    assert not Assignment.objects.filter(followed_up_at__isnull=False).exists()

    if then == "more submissions":
        submitted += [_submit(client, batch, f"w{i}", records, i) for i in range(12, 24)]
    # Beat goes on sending looks; a fresh worker's looks leave the batch alone until the dead look's
    # lock expires, then follow up all of them.
    celery_worker_process("default", "rescuer", shared_redis)
    done = lambda: not Assignment.objects.filter(followed_up_at__isnull=True).exists()  # noqa: E731
    assert _wait_for(done, timeout=followups.RUNNING_LOCK_SECONDS + 30), (
        tmp_path / "rescuer.log"
    ).read_text()[-3000:]
    resumed = time.monotonic() - since
    print(f"then {then}: followed up {len(submitted)} submissions {resumed:.1f} s later")
    assert resumed < followups.RUNNING_LOCK_SECONDS + 20
    _assert_each_followed_up_once(
        batch, submitted, [tmp_path / "doomed.log", tmp_path / "rescuer.log"], receiver
    )
    assert not locks.exists(lock_key)
    assert published == []  # the pages queued nothing


def test_draining__a_live_run_keeps_its_lock__a_dead_one_frees_it(
    shared_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(followups, "RUNNING_LOCK_SECONDS", 0.6)
    locks = redis_client.Redis.from_url(shared_redis)
    with followups.draining([1, 3]) as held:
        time.sleep(1.5)  # over twice the locks' lifetime: renewed meanwhile
        with followups.draining([1, 2, 3]) as second:
            assert (held, second) == ([1, 3], [2])
    with followups.draining([1]) as again:
        assert again == [1]
    # A holder that never renews (a killed run): its lock is free once its lifetime is over.
    dead = locks.lock(cache.make_key("followups:running:1"), timeout=0.6, thread_local=False)
    assert dead.acquire(blocking=False)
    with followups.draining([1]) as blocked:
        assert blocked == []
    time.sleep(0.8)
    with followups.draining([1]) as freed:
        assert freed == [1]
        locks.delete(cache.make_key("followups:running:1"))  # it expired while the run went on
    assert not locks.exists(cache.make_key("followups:running:1"))  # and ending the run is quiet


def test_drain__a_run_whose_lock_expired_mid_run_does_not_redo_what_the_next_run_did(
    shared_redis: str, shared_data: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from crowd.services import after_submission as service

    batch, records = _batch(shared_data, hits=6)
    client = Client()
    ids = {_submit(client, batch, f"w{i}", records, i).pk for i in range(6)}
    real_follow_up = service.follow_up
    locks = redis_client.Redis.from_url(shared_redis)
    marked: dict[int, Any] = {}
    second: dict[str, Any] = {}

    def second_run() -> None:
        try:
            with followups.draining([batch.pk]) as held:
                (done,) = followups.drain(held)
                second.update(held=held, **done)
        finally:
            connection.close()

    def stalled(read: list[int], pending_only: bool = False) -> dict[int, Any]:
        """The first run stalls after its read: its lock expires and a second run does the batch."""
        locks.delete(cache.make_key(f"followups:running:{batch.pk}"))  # what an expiry does
        monkeypatch.setattr(service, "follow_up", real_follow_up)
        thread = threading.Thread(target=second_run)
        thread.start()
        thread.join()
        marked.update(Assignment.objects.filter(pk__in=ids).values_list("pk", "followed_up_at"))
        return real_follow_up(read, pending_only=pending_only)

    monkeypatch.setattr(service, "follow_up", stalled)
    with followups.draining([batch.pk]) as held:
        assert held == [batch.pk]
        (first,) = followups.drain(held)
    assert second == {"held": [batch.pk], "batch": batch.pk, "submissions": 6, "flagged": 0, "failed": 0}
    assert first["submissions"] == 0  # it read all six, then found them done
    assert None not in marked.values()
    assert dict(Assignment.objects.filter(pk__in=ids).values_list("pk", "followed_up_at")) == marked
