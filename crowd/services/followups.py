"""The work owed after a stored submission, queued under task ids derived from the data, and the sweep
that re-queues it when a killed worker lost it.

Two follow-ups exist: ``after_submission`` (HIT completion, QC of the pairs and the screening grade) for
every submitted assignment, and ``create_validation_hit`` (the SciQ stage-2 HIT) for every accepted
stage-1 question. Each is queued with a deterministic task id (``after_submission:<assignment>``,
``create_validation_hit:<pair>``).

With :func:`batching` (Redis) the web process queues nothing for a submission: the stored submission
(its ``followed_up_at`` still empty, under the partial index ``assignment_followup_owed``) is itself
the record of the work owed, and a beat job, :func:`dispatch`, every ``CROWDQA_FOLLOWUP_BATCH_SECONDS``
queues one run of ``after_submissions`` for each batch with a submission owed (see :func:`drain`).
A submit then costs the web process no broker or cache round trip, a submission committed by a web
process that died before answering is followed up like any other, and under load one run follows up
all of a batch's submissions of the interval. Without batching (the embedded broker) the web process
queues ``after_submission`` for each submission once it is committed.

Neither broker protects a message whose worker dies: the embedded file broker deletes a message as
soon as a worker takes it, and Redis restores an unacked one only after its visibility timeout. With
batching the next :func:`dispatch` queues a new run for what a killed run left (once the dead run's
lock expires, :func:`draining`). The sweep (a beat job) re-queues, once the submission or approval is
``CROWDQA_FOLLOWUP_TIME_LIMIT`` seconds old:

- every submission whose ``followed_up_at`` is still empty (the job sets it as its last step, and
  stores no result: it runs once per submission, so a result row per job would cost two writes that
  only this sweep would read), each on its own job;
- every accepted question with no stage-2 HIT whose job has no result row in the Celery result
  backend, or a ``STARTED`` one older than the time limit.

Both tasks are idempotent, so a follow-up that was merely slow and runs twice does no harm.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from django_celery_results.models import TaskResult

from annotation.hits import kinds_where
from annotation.models import Assignment, QAPair

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

#: Submissions and approvals older than this are not swept: the result backend forgets results after a
#: day (``result_expires``), and a missing row must not look like a lost follow-up.
SWEEP_WINDOW = timedelta(hours=20)
#: How long the "a run of this batch's follow-up job is queued" mark lives: a message lost before its
#: run started holds back the batch's next run at most this long (the sweep still covers them).
QUEUED_MARK_SECONDS = 30
#: How long a run's lock in Redis lives unless renewed: the run renews it every third of this while it
#: works, so a run killed while holding it delays the batch's follow-ups by at most this long.
RUNNING_LOCK_SECONDS = 10.0
#: The lock's lifetime in a shared cache other than Redis, which the run does not renew: long enough
#: for a run of ``DRAIN_LIMIT`` submissions, and how long a killed run delays its batch's follow-ups.
RUNNING_MARK_SECONDS = 300
#: The first wait of a run that finds another run of its batch holding the lock (doubling, up to
#: ``DRAIN_RETRY_MAX_SECONDS``, so a run waiting on a dead run's lock starts soon after it expires).
DRAIN_RETRY_SECONDS = 0.25
DRAIN_RETRY_MAX_SECONDS = 5.0


def time_limit() -> timedelta:
    """How long a follow-up may be queued or running before the sweep counts it as lost."""
    return timedelta(seconds=float(settings.CROWDQA_FOLLOWUP_TIME_LIMIT))


def after_submission_id(assignment_id: int) -> str:
    return f"after_submission:{assignment_id}"


def validation_hit_id(pair_id: int) -> str:
    return f"create_validation_hit:{pair_id}"


def batching() -> bool:
    """Whether submissions are followed up a batch at a time (``CROWDQA_FOLLOWUP_BATCHING``: on with
    Redis, whose cache every Celery process shares; the marks and the lock below need that)."""
    return bool(settings.CROWDQA_FOLLOWUP_BATCHING)


def _queued_key(batch_id: int) -> str:
    return f"followups:queued:{batch_id}"


def _running_key(batch_id: int) -> str:
    return f"followups:running:{batch_id}"


def queue_after_submission(assignment_id: int, connection: Any = None) -> None:
    """Queue the follow-up (QC, HIT completion, grades) of one stored submission, once it is committed:
    the web process's step without :func:`batching`, and the sweep's for a submission it found lost."""
    from crowd.followup_tasks import after_submission

    after_submission.apply_async(
        args=[assignment_id], task_id=after_submission_id(assignment_id), connection=connection
    )


def dispatch_interval() -> float:
    """Seconds between two runs of :func:`dispatch` (``CROWDQA_FOLLOWUP_BATCH_SECONDS``), with
    :func:`batching`: how long at most a submission waits before its batch's run is queued.

    Every submission of a batch stored in the interval is followed up by that one run (one Celery
    message, one read, one UPDATE each way); a run for each submission, as a worker faster than the
    submissions would take them, made Celery's own work per message (about 8 ms of CPU) most of the cost.
    """
    return float(settings.CROWDQA_FOLLOWUP_BATCH_SECONDS)


def owed_batches(now: Optional[Any] = None) -> list[int]:
    """The batches with a submission younger than the time limit that no run has followed up yet
    (older ones are the sweep's); the partial index ``assignment_followup_owed`` holds exactly those
    submissions, so the read stays as small as the backlog."""
    now = now or timezone.now()
    return list(
        Assignment.objects.filter(submitted_at__gte=now - time_limit(), followed_up_at__isnull=True)
        .order_by("hit__batch_id")
        .values_list("hit__batch_id", flat=True)
        .distinct()
    )


def dispatch(now: Optional[Any] = None, connection: Any = None) -> list[int]:
    """Queue a run of the batched follow-up job for every batch owed one (:func:`owed_batches`) unless
    one is queued already; returns the batches given a run.

    A run killed mid-run left its submissions unmarked: the next call queues the batch a run, which
    waits on the dead run's lock (at most ``RUNNING_LOCK_SECONDS``) and then follows them up.
    """
    queued = [pk for pk in owed_batches(now) if queue_batch_followup(pk, connection=connection)]
    if queued:
        logger.debug("queued follow-up runs of batches %s", queued)
    return queued


def queue_batch_followup(batch_id: int, connection: Any = None) -> bool:
    """Queue a run of the batch's follow-up job unless one is queued already; whether one was queued.

    A worker killed while the message waits loses nothing: the mark expires ``QUEUED_MARK_SECONDS``
    later, and the next :func:`dispatch` queues another run.
    """
    from crowd.followup_tasks import after_submissions

    if not _mark_queued(batch_id, QUEUED_MARK_SECONDS):
        return False
    try:
        after_submissions.apply_async(args=[batch_id], connection=connection)
    except Exception:
        _unmark_queued(batch_id)  # the next dispatch tries again
        raise
    return True


def _mark_queued(batch_id: int, seconds: float) -> bool:
    """Set the batch's "a run is queued" mark unless it is set; whether this call set it.

    With the Redis cache it is one ``SET NX EX`` through redis-py under the cache's key (about 0.05 ms
    of CPU against 0.2 ms for ``cache.add``, which validates the key and pickles the value); only the
    key's presence counts.
    """
    client = _cache_redis()
    if client is None:
        return bool(cache.add(_queued_key(batch_id), 1, timeout=seconds))
    return bool(client.set(cache.make_key(_queued_key(batch_id)), 1, nx=True, ex=max(1, math.ceil(seconds))))


def _unmark_queued(batch_id: int) -> None:
    client = _cache_redis()
    if client is None:
        cache.delete(_queued_key(batch_id))
    else:
        client.delete(cache.make_key(_queued_key(batch_id)))


def retry_wait(retries: int) -> float:
    """Seconds a run that found its batch's lock held waits before its ``retries``-th retry."""
    return min(DRAIN_RETRY_MAX_SECONDS, DRAIN_RETRY_SECONDS * 2 ** min(retries, 8))


@lru_cache(maxsize=4)
def _redis_client(url: str) -> redis.Redis:
    # Imported here: a web process never loads redis-py for a submission (see the module's docstring).
    import redis

    return redis.Redis.from_url(url)


def _cache_redis() -> Optional[redis.Redis]:
    """The Redis server of the default cache (its first, writable, server), or None for another cache."""
    config = settings.CACHES.get("default", {})
    if config.get("BACKEND") != "django.core.cache.backends.redis.RedisCache":
        return None
    location = config["LOCATION"]
    servers = location if isinstance(location, (list, tuple)) else location.split(",")
    return _redis_client(servers[0].strip())


@contextmanager
def draining(batch_id: int) -> Iterator[bool]:
    """Hold the batch's follow-up lock while the block runs; yields False when another run holds it.

    With the Redis cache the lock is a redis-py :class:`~redis.lock.Lock` of ``RUNNING_LOCK_SECONDS``
    that a thread of the run renews (``reacquire``, which checks the lock is still the run's own) every
    third of that while the block runs: a live run keeps its lock however long it works, and a run
    killed while holding it frees it within ``RUNNING_LOCK_SECONDS``. A run whose renewal failed that
    long (Redis out of reach, the process stopped) may overlap the next run of its batch: it then skips
    the submissions the other run marked before it took them up
    (:func:`~crowd.services.after_submission.follow_up`, ``pending_only``), and one both work on at
    once is stored the same, every step being idempotent. With another shared cache the lock is a mark
    of ``RUNNING_MARK_SECONDS``, not renewed.
    """
    client = _cache_redis()
    if client is None:
        yield from _cache_mark(batch_id)
        return
    from redis.exceptions import RedisError

    key = cache.make_key(_running_key(batch_id))
    lock = client.lock(key, timeout=RUNNING_LOCK_SECONDS, blocking=False, thread_local=False)
    if not lock.acquire():
        yield False
        return
    stop = threading.Event()
    renewing = threading.Thread(target=_renew, args=(lock, stop), name=f"followups-lock-{batch_id}")
    renewing.daemon = True
    renewing.start()
    try:
        yield True
    finally:
        stop.set()
        renewing.join()
        try:
            lock.release()
        except RedisError:  # LockError too: it expired before the run ended
            logger.warning("could not release the follow-up lock of Batch(%s)", batch_id, exc_info=True)


def _renew(lock: redis.lock.Lock, stop: threading.Event) -> None:
    """Reset ``lock``'s lifetime every third of it until ``stop`` is set or the lock is no longer ours."""
    from redis.exceptions import LockNotOwnedError, RedisError

    while not stop.wait(RUNNING_LOCK_SECONDS / 3):
        try:
            lock.reacquire()
        except LockNotOwnedError:
            logger.warning("the follow-up lock %s expired while its run went on", lock.name)
            return
        except RedisError:
            logger.warning("could not renew the follow-up lock %s; trying again", lock.name, exc_info=True)


def _cache_mark(batch_id: int) -> Iterator[bool]:
    key, token = _running_key(batch_id), uuid.uuid4().hex
    if not cache.add(key, token, timeout=RUNNING_MARK_SECONDS):
        yield False
        return
    try:
        yield True
    finally:
        if cache.get(key) == token:
            cache.delete(key)


def drain(batch_id: int, now: Optional[Any] = None) -> dict[str, Any]:
    """Follow up the batch's pending submissions (those younger than the time limit; older ones are
    the sweep's); returns the batch id and how many submissions were followed up and flagged.

    The queued mark is dropped before the read, so a submission committed after the read gets the
    next run from the next :func:`dispatch`; a run that read ``DRAIN_LIMIT`` submissions queues the
    next itself.
    """
    from crowd.services.after_submission import DRAIN_LIMIT, follow_up, pending

    _unmark_queued(batch_id)
    now = now or timezone.now()
    ids = pending(batch_id, since=now - time_limit(), limit=DRAIN_LIMIT)
    summaries = follow_up(ids, pending_only=True)
    if len(ids) >= DRAIN_LIMIT:
        queue_batch_followup(batch_id)
    return {
        "batch": batch_id,
        "submissions": len(summaries),
        "flagged": sum(1 for s in summaries.values() if s.get("flagged")),
    }


def queue_validation_hit(pair_id: int, connection: Any = None) -> None:
    """Queue the creation of an accepted SciQ question's stage-2 HIT."""
    from crowd.followup_tasks import create_validation_hit

    create_validation_hit.apply_async(
        args=[pair_id], task_id=validation_hit_id(pair_id), connection=connection
    )


def lost(task_ids: dict[str, int], now: Any) -> list[int]:
    """The objects whose follow-up has no result, or a STARTED one older than the time limit (``task_ids``:
    deterministic task id -> object id; the model in the loop's sweep uses it too)."""
    results = dict(TaskResult.objects.filter(task_id__in=list(task_ids)).values_list("task_id", "status"))
    stale = set(
        TaskResult.objects.filter(
            task_id__in=list(task_ids), status="STARTED", date_done__lt=now - time_limit()
        ).values_list("task_id", flat=True)
    )
    return [pk for task_id, pk in task_ids.items() if task_id not in results or task_id in stale]


def requeue_lost_followups(now: Optional[Any] = None, connection: Any = None) -> dict[str, list[int]]:
    """Re-queue every follow-up a killed worker lost (older than the time limit); returns the
    assignment and pair ids re-queued."""
    now = now or timezone.now()
    settled = now - time_limit()
    assignments = list(
        Assignment.objects.filter(
            submitted_at__gte=now - SWEEP_WINDOW, submitted_at__lt=settled, followed_up_at__isnull=True
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    accepted = (
        QAPair.objects.filter(
            status=QAPair.Status.ACCEPTED,
            assignment__hit__batch__kind__in=kinds_where(lambda h: h.stage2_kind is not None),
            assignment__reviewed_at__gte=now - SWEEP_WINDOW,
            assignment__reviewed_at__lt=settled,
            validation_hits__isnull=True,
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    pairs = lost({validation_hit_id(pk): pk for pk in accepted}, now)
    for pk in assignments:
        queue_after_submission(pk, connection=connection)
    for pk in pairs:
        queue_validation_hit(pk, connection=connection)
    if assignments or pairs:
        logger.warning("re-queued lost follow-ups: assignments %s, stage-2 pairs %s", assignments, pairs)
    return {"assignments": assignments, "pairs": pairs}
