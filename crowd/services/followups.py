"""The work owed after a stored submission, queued under task ids derived from the data, and the sweep
that re-queues it when a killed worker lost it.

Two follow-ups exist: ``after_submission`` (HIT completion, QC of the pairs and the screening grade) for
every submitted assignment, and ``create_validation_hit`` (the SciQ stage-2 HIT) for every accepted
stage-1 question. Each is queued with a deterministic task id (``after_submission:<assignment>``,
``create_validation_hit:<pair>``).

With :func:`batching` (Redis) the web process queues nothing for a submission: the stored submission
(its ``followed_up_at`` still empty, under the partial index ``assignment_followup_owed``) is itself
the record of the work owed, and a beat job every ``CROWDQA_FOLLOWUP_BATCH_SECONDS`` (a "look",
:func:`dispatch`) follows up every batch with a submission owed, all in one pass, under each batch's
lock (:func:`draining`, :func:`drain`). A submit then costs the web process no broker or cache
round trip, a submission committed by a web process that died before answering is followed up like
any other, and under load one Celery message a second follows up every submission of every batch
stored in that second. Without batching (the embedded broker) the web process queues
``after_submission`` for each submission once it is committed.

Neither broker protects a message whose worker dies: the embedded file broker deletes a message as
soon as a worker takes it, and Redis restores an unacked one only after its visibility timeout. With
batching nothing waits in a message: the next look follows up what a killed look left, once the dead
look's lock on the batch expires. The sweep (a beat job) re-queues, once the submission or approval
is ``CROWDQA_FOLLOWUP_TIME_LIMIT`` seconds old:

- every submission whose ``followed_up_at`` is still empty (the job sets it as its last step, and
  stores no result: it runs once per submission, so a result row per job would cost two writes that
  only this sweep would read), each on its own job;
- every accepted question with no stage-2 HIT whose job has no result row in the Celery result
  backend, or a ``STARTED`` one older than the time limit.

Both tasks are idempotent, so a follow-up that was merely slow and runs twice does no harm.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from annotation.hits import kinds_where
from annotation.models import HIT, Assignment, QAPair

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

#: Submissions and approvals older than this are not swept: the result backend forgets results after a
#: day (``result_expires``), and a missing row must not look like a lost follow-up.
SWEEP_WINDOW = timedelta(hours=20)
#: How long a run's lock in Redis lives unless renewed: the run renews it every third of this while it
#: works, so a run killed while holding it delays the batch's follow-ups by at most this long.
RUNNING_LOCK_SECONDS = 10.0
#: The lock's lifetime in a shared cache other than Redis, which the run does not renew: long enough
#: for a run of ``DRAIN_LIMIT`` submissions, and how long a killed run delays its batch's follow-ups.
RUNNING_MARK_SECONDS = 300
#: A look that left a submission unmarked because its follow-up raised holds the next looks off its
#: batch this long, so a failing submission is retried twice a minute, not every second; the batch's
#: other submissions wait that long too while one keeps failing.
FAILED_HOLD_SECONDS = 30


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


def _held_key(batch_id: int) -> str:
    return f"followups:held:{batch_id}"


def _running_key(batch_id: int) -> str:
    return f"followups:running:{batch_id}"


def queue_after_submission(assignment_id: int, connection: Any = None) -> None:
    """Queue the follow-up (QC, HIT completion, grades) of one stored submission, once it is committed:
    the web process's step without :func:`batching`, and the sweep's for a submission it found lost."""
    from crowd.followup_tasks import after_submission

    after_submission.apply_async(
        args=[assignment_id], task_id=after_submission_id(assignment_id), connection=connection
    )


def owed_batches(now: Optional[Any] = None) -> list[int]:
    """The batches with a submission younger than the time limit that no job has followed up yet
    (older ones are the sweep's).

    Two reads, each as small as the backlog: the owed submissions' HITs from the partial index
    ``assignment_followup_owed``, then those HITs' batches by primary key. As one join PostgreSQL
    may hash the few owed rows and scan every HIT to probe them, every second.
    """
    from crowd.services.after_submission import owed

    now = now or timezone.now()
    hits = list(owed(now - time_limit()).values_list("hit_id", flat=True).distinct())
    if not hits:
        return []
    return list(
        HIT.objects.filter(pk__in=hits).order_by("batch_id").values_list("batch_id", flat=True).distinct()
    )


def dispatch(now: Optional[Any] = None) -> list[dict[str, Any]]:
    """Follow up every batch owed a follow-up (:func:`owed_batches`) in one pass; returns what
    :func:`drain` returned for each batch followed up.

    A batch another look is working on (its lock, :func:`draining`) is left to that look, and one whose
    last look left a submission failing is left alone ``FAILED_HOLD_SECONDS``. A look killed mid-pass
    left its submissions unmarked: a later look follows them up once the dead look's locks expire (at
    most ``RUNNING_LOCK_SECONDS``).
    """
    owed = owed_batches(now)
    if not owed:
        return []
    held_off = cache.get_many([_held_key(pk) for pk in owed])
    with draining([pk for pk in owed if _held_key(pk) not in held_off]) as held:
        return drain(held, now) if held else []


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
def draining(batch_ids: Iterable[int]) -> Iterator[list[int]]:
    """Hold the follow-up lock of each of ``batch_ids`` that no other run holds while the block runs;
    yields the batches whose lock this run holds (in the order given), the others being another run's.

    With the Redis cache each lock is a redis-py :class:`~redis.lock.Lock` of ``RUNNING_LOCK_SECONDS``
    that a thread of the run renews (``reacquire``, which checks the lock is still the run's own) every
    third of that while the block runs: a live run keeps its locks however long it works, and a run
    killed while holding them frees them within ``RUNNING_LOCK_SECONDS``. A run whose renewal failed
    that long (Redis out of reach, the process stopped) may overlap the next run of its batches: it then
    skips the submissions the other run marked before it took them up
    (:func:`~crowd.services.after_submission.follow_up`, ``pending_only``), and one both work on at
    once is stored the same, every step being idempotent. With another shared cache each lock is a mark
    of ``RUNNING_MARK_SECONDS``, not renewed.
    """
    client = _cache_redis()
    if client is None:
        yield from _cache_marks(list(batch_ids))
        return
    from redis.exceptions import RedisError

    locks: dict[int, redis.lock.Lock] = {}
    try:
        for batch_id in batch_ids:
            lock = client.lock(
                cache.make_key(_running_key(batch_id)),
                timeout=RUNNING_LOCK_SECONDS,
                blocking=False,
                thread_local=False,
            )
            if lock.acquire():
                locks[batch_id] = lock
        if not locks:
            yield []
            return
        stop = threading.Event()
        renewing = threading.Thread(target=_renew, args=(list(locks.values()), stop), name="followups-locks")
        renewing.daemon = True
        renewing.start()
        try:
            yield list(locks)
        finally:
            stop.set()
            renewing.join()
    finally:
        for batch_id, lock in locks.items():
            try:
                lock.release()
            except RedisError:  # LockError too: it expired before the run ended
                logger.warning("could not release the follow-up lock of Batch(%s)", batch_id, exc_info=True)


def _renew(locks: list[redis.lock.Lock], stop: threading.Event) -> None:
    """Reset each lock's lifetime every third of it until ``stop`` is set; a lock that is no longer
    ours is left alone from then on."""
    from redis.exceptions import LockNotOwnedError, RedisError

    while not stop.wait(RUNNING_LOCK_SECONDS / 3):
        for lock in list(locks):
            try:
                lock.reacquire()
            except LockNotOwnedError:
                logger.warning("the follow-up lock %s expired while its run went on", lock.name)
                locks.remove(lock)
            except RedisError:
                logger.warning(
                    "could not renew the follow-up lock %s; trying again", lock.name, exc_info=True
                )


def _cache_marks(batch_ids: list[int]) -> Iterator[list[int]]:
    token = uuid.uuid4().hex
    held = [pk for pk in batch_ids if cache.add(_running_key(pk), token, timeout=RUNNING_MARK_SECONDS)]
    try:
        yield held
    finally:
        for pk in held:
            if cache.get(_running_key(pk)) == token:
                cache.delete(_running_key(pk))


def drain(batch_ids: list[int], now: Optional[Any] = None) -> list[dict[str, Any]]:
    """Follow up the pending submissions of ``batch_ids`` in one pass (at most ``DRAIN_LIMIT``, oldest
    first, those younger than the time limit: older ones are the sweep's); returns, per batch, its id
    and how many of its submissions were followed up, flagged and failed. Called holding the batches'
    locks (:func:`draining`).

    One read of what is pending and one :func:`~crowd.services.after_submission.follow_up` for all the
    batches together: under load a look finds a few submissions in each of many batches. What the
    limit left is the next look's; a submission whose follow-up raised holds the next looks off its
    batch ``FAILED_HOLD_SECONDS``.
    """
    from crowd.services.after_submission import DRAIN_LIMIT, follow_up, pending

    now = now or timezone.now()
    batch_of = pending(batch_ids, since=now - time_limit(), limit=DRAIN_LIMIT)
    summaries = follow_up(list(batch_of), pending_only=True)
    done = {pk: {"batch": pk, "submissions": 0, "flagged": 0, "failed": 0} for pk in batch_ids}
    for assignment_id, summary in summaries.items():
        counts = done[batch_of[assignment_id]]
        counts["submissions"] += 1
        counts["flagged"] += 1 if summary.get("flagged") else 0
        counts["failed"] += 1 if summary.get("failed") else 0
    failing = {_held_key(pk): 1 for pk, counts in done.items() if counts["failed"]}
    if failing:
        cache.set_many(failing, timeout=FAILED_HOLD_SECONDS)
    return list(done.values())


def queue_validation_hit(pair_id: int, connection: Any = None) -> None:
    """Queue the creation of an accepted SciQ question's stage-2 HIT."""
    from crowd.followup_tasks import create_validation_hit

    create_validation_hit.apply_async(
        args=[pair_id], task_id=validation_hit_id(pair_id), connection=connection
    )


def lost(task_ids: dict[str, int], now: Any) -> list[int]:
    """The objects whose follow-up has no result, or a STARTED one older than the time limit (``task_ids``:
    deterministic task id -> object id; the model in the loop's sweep uses it too).

    Runs on a worker: the web server does not install the result store (``CROWDQA_WEB_SERVER``)."""
    from django_celery_results.models import TaskResult

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
