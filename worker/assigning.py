"""Hand out assignments: the local crowd's "next HIT", MTurk's accepted assignment, Prolific's arrival.

Every claim runs in one transaction that locks the HIT row it fills (``SELECT ... FOR UPDATE SKIP
LOCKED`` on PostgreSQL; SQLite runs write transactions one at a time because the settings open them
``IMMEDIATE``), and re-counts the HIT's live slots after taking the lock. So two workers asking at the
same instant never get the same slot, and since SciQ stage-1 HITs never share a passage, never the same
passage (Turkle's race, turkle#79, was an unevaluated ``select_for_update``: here the locked row is
fetched).
"""

from __future__ import annotations

import functools
import logging
from datetime import timedelta
from typing import Any, Optional

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch
from annotation.sql_reads import SqlRead, column, quote
from annotation.sql_writes import SqlInsert
from crowd.models import Worker
from crowd.providers.traits import hosted_platforms, traits_for
from worker import admission

logger = logging.getLogger(__name__)


ClaimRefused = admission.Refused
"""The worker cannot get work from this batch now (the admission rule's refusal; the message is shown)."""


def _expiry(batch: Batch) -> Any:
    return timezone.now() + timedelta(minutes=batch.time_limit_minutes)


_CURRENT = SqlRead(
    Assignment,
    related=("hit",),
    where='{hit}."batch_id" = %s AND {self}."worker_id" = %s AND {self}."status" = %s',
    order_by='{self}."accepted_at" DESC',
)
"""``Assignment.objects.filter(hit__batch=batch, worker=worker, status=ACCEPTED).select_related("hit")``
(in the model's order, newest first), written once (:mod:`annotation.sql_reads`): every claim asks it
first."""


def current_assignment(batch: Batch, worker: Worker) -> Optional[Assignment]:
    """The worker's unfinished, unexpired assignment in ``batch``, if any (resumed instead of a new one)."""
    for assignment in _CURRENT.all(batch.pk, worker.pk, Assignment.Status.ACCEPTED.value):
        if not assignment.expire_if_overdue():
            return assignment
    return None


@functools.cache
def _free_hit_read(wait: bool, passed: int) -> SqlRead[HIT]:
    """The first HIT of a batch with a free slot a worker may take, locked, leaving out ``passed`` HITs.

    As a queryset (tests/test_claim_reads.py compares the two)::

        holding = Assignment.objects.filter(hit=OuterRef("pk")).live().vouched().filter(
            ~Q(status=ACCEPTED) | Q(expires_at__isnull=True) | Q(expires_at__gte=now)
        )  # counted
        HIT.objects.filter(batch=batch, status=OPEN, <holding count> < F("max_assignments"))
            .exclude(Exists(the worker's assignments of the HIT))
            .exclude(Exists(the HIT's QA pair written by the worker))
            .exclude(pk__in=passed).order_by("position")
            .select_for_update(skip_locked=not wait, of=("self",)).first()

    Slots are counted per candidate row by correlated subqueries (an overdue accepted assignment holds no
    slot: it is expired when its HIT is taken), so PostgreSQL walks the ``(batch, position)`` index and
    stops at the first free row: a claim costs the same whatever the batch's size. No aggregate at the top
    level, so the row can be locked; only the HIT row is locked (``FOR UPDATE OF``), not what the
    conditions read. ``wait`` False skips rows another claim holds (``SKIP LOCKED``); True waits for them.
    ``has_overdue`` says whether an overdue session sits on the HIT, so that the claim expires sessions
    only where there are some. Written once per shape: Django compiled the queryset on every claim, 2 ms
    of CPU against 0.5 to run it. ``passed`` is the number of ids left out (HITs refused under their lock
    in this claim, usually none), a power of two so that a session prepares few shapes
    (:func:`_lock_free_hit` pads the list with 0, which no row has).
    """
    assignments = quote(Assignment._meta.db_table)
    hit, worker = column(Assignment, "hit"), column(Assignment, "worker")
    status, expires = column(Assignment, "status"), column(Assignment, "expires_at")
    holding = admission.held_slots_sql(f" AND (h.{status} <> %s OR h.{expires} IS NULL OR h.{expires} >= %s)")
    own = f'SELECT 1 FROM {assignments} w WHERE w.{hit} = {{self}}."id" AND w.{worker} = %s'
    written = admission.own_question_sql()
    where = (
        f"{{self}}.{column(HIT, 'batch')} = %s AND {{self}}.{column(HIT, 'status')} = %s"
        f" AND {holding} < {{self}}.{column(HIT, 'max_assignments')}"
        f" AND NOT EXISTS ({own}) AND NOT EXISTS ({written})"
    )
    if passed:
        where += f' AND {{self}}."id" NOT IN ({", ".join(["%s"] * passed)})'
    overdue = (
        f'EXISTS (SELECT 1 FROM {assignments} o WHERE o.{hit} = {{self}}."id"'
        f" AND o.{status} = %s AND o.{expires} < %s)"
    )
    return SqlRead(
        HIT,
        extra={"has_overdue": (overdue, bool)},
        where=where,
        order_by=f"{{self}}.{column(HIT, 'position')}",
        limit=1,
        lock=True,
        skip_locked=not wait,
    )


def _lock_free_hit(batch: Batch, worker: Worker, passed: list[int], wait: bool) -> Optional[HIT]:
    """Lock and return the first free HIT not in ``passed`` (None when there is none): see
    :func:`_free_hit_read`."""
    now = Assignment._meta.get_field("expires_at").get_db_prep_value(timezone.now(), connection)
    gone = (Assignment.Status.RETURNED.value, Assignment.Status.EXPIRED.value)
    accepted = Assignment.Status.ACCEPTED.value
    shape = 1 << (len(passed) - 1).bit_length() if passed else 0
    left_out = [*passed, *[0] * (shape - len(passed))]
    overdue = (accepted, now)  # the selected ``has_overdue`` comes before the condition
    where = (batch.pk, HIT.Status.OPEN.value, *gone, True, accepted, now, worker.pk, worker.pk, *left_out)
    found = _free_hit_read(wait, shape).all(*overdue, *where)
    return found[0] if found else None


_WORKER_LOCK = SqlRead(Worker, where='{self}."id" = %s', lock=True)
"""``Worker.objects.select_for_update().filter(pk=...)``, written once: every claim takes this lock."""

_INSERT_ASSIGNMENT = SqlInsert(Assignment)
"""``Assignment.objects.create(...)`` without compiling the INSERT on every claim (no signal handler
listens to assignments; :mod:`annotation.sql_writes`)."""


def _lock_worker(worker: Worker) -> None:
    """Take the worker's row lock (the caller is in the claim's transaction)."""
    _WORKER_LOCK.all(worker.pk)


def _expire_overdue_on(hit: HIT) -> None:
    """Expire the overdue assignments of ``hit`` (the caller holds its lock), so their slots count free."""
    for assignment in Assignment.objects.overdue().filter(hit=hit).only("pk", "status", "expires_at"):
        assignment.expire_if_overdue()


def _new_assignment(
    hit: HIT, worker: Worker, batch: Batch, platform_ref: str, meta: Optional[dict], vouched: bool = True
) -> Assignment:
    """Create the worker's assignment on ``hit`` with the batch's time limit (caller holds the HIT lock)."""
    assignment = Assignment(
        hit=hit,
        worker=worker,
        expires_at=_expiry(batch),
        platform_ref=platform_ref,
        platform_meta=meta or {},
        vouched=vouched,
    )
    _INSERT_ASSIGNMENT.save(assignment)
    logger.info("Worker(%s) accepted HIT(%s) as Assignment(%s)", worker.pk, hit.pk, assignment.pk)
    return assignment


def _refuse_second_session(batch: Batch, worker: Worker, platform_ref: str) -> None:
    """Refuse a platform session when the worker already had another one in ``batch`` (Prolific).

    Prolific gives a participant one session per study, ever: a second ``SESSION_ID`` for the same
    participant, whatever became of the first (working, submitted, returned), is not one Prolific
    issued for this study, so it gets no assignment in their name.
    """
    if not platform_ref:
        return
    other = Assignment.objects.filter(hit__batch=batch, worker=worker).exclude(platform_ref=platform_ref)
    if other.exists():
        raise ClaimRefused(
            "You already took part in this study in another session; a study can be taken once.",
            status=409,
        )


def _lock_worker_and_recheck(batch: Batch, worker: Worker, platform_ref: str) -> None:
    """Lock the worker's row and check their caps again, inside the claim's transaction.

    Two arrivals of one worker at the same instant lock different HITs, so the HIT lock alone lets each
    see none of the other's claims; the worker's row lock serialises them, and the second one sees the
    first one's assignment here (caps, "one session per study", "one open assignment"). The HIT is
    always locked first, then the worker, so claims never wait on each other in a cycle.
    """
    _lock_worker(worker)
    held = Assignment.objects.filter(hit__batch=batch, worker=worker, status=Assignment.Status.ACCEPTED)
    if platform_ref and held.exists():
        raise ClaimRefused(
            "You already have this task open in another session. Please go back to that session.",
            status=409,
        )
    _refuse_second_session(batch, worker, platform_ref)
    admission.check_can_work(batch, worker)


def claim_next(
    batch: Batch, worker: Worker, platform_ref: str = "", meta: Optional[dict] = None
) -> Assignment:
    """Give ``worker`` their current assignment in ``batch`` or a new one on the next free HIT.

    Args:
        batch: a published batch.
        worker: the worker asking.
        platform_ref: the platform's id of this assignment (Prolific's SESSION_ID).
        meta: platform details kept on the assignment (study id, return URL...).

    Returns:
        The assignment (resumed or new).

    Raises:
        ClaimRefused: when the worker may not work on the batch or no HIT is left for them.
    """
    if platform_ref:
        # The platform's session id is the credential: the same session always finds its own assignment
        # (whatever its state), and another session of the same worker never opens it.
        bound = (
            Assignment.objects.filter(hit__batch=batch, worker=worker, platform_ref=platform_ref)
            .select_related("hit")
            .first()
        )
        if bound is not None:
            admission.check_can_work(batch, worker, resuming=True)
            return bound
    existing = current_assignment(batch, worker)
    if existing is not None:
        if existing.platform_ref != platform_ref:
            raise ClaimRefused(
                "You already have this task open in another session. Please go back to that session.",
                status=409,
            )
        admission.check_can_work(batch, worker, resuming=True)
        return existing
    _refuse_second_session(batch, worker, platform_ref)
    admission.check_can_work(batch, worker)
    # First pass skips HITs another claim has locked; a second pass waits for such a HIT, since the other
    # claim may give up on it (capped, or it was full) and "no HIT left" must be true when said. A HIT
    # refused under its lock is passed over; the list stays as short as the refusals.
    passed: list[int] = []
    for wait in (False, True):
        while True:
            try:
                with transaction.atomic():
                    hit = _lock_free_hit(batch, worker, passed, wait)
                    if hit is None:
                        break
                    if hit.has_overdue:
                        _expire_overdue_on(hit)
                    if admission.hit_refusal(batch, worker, hit) is None:
                        _lock_worker_and_recheck(batch, worker, platform_ref)
                        return _new_assignment(hit, worker, batch, platform_ref, meta)
            except IntegrityError:
                # The same worker claimed this HIT in a parallel request (double click): resume it.
                resumed = current_assignment(batch, worker)
                if resumed is not None:
                    return resumed
            passed.append(hit.pk)
    raise ClaimRefused("There is no HIT left for you in this batch right now. Thank you!", status=409)


def claim_platform_assignment(
    batch: Batch, hit: HIT, worker: Worker, platform_ref: str, meta: Optional[dict] = None
) -> Assignment:
    """Record the assignment a platform gave the worker on a known HIT (MTurk's accept).

    Each platform assignment id is its own session: one local row, and so one draft, per id (a unique
    constraint). The same id resumes its row; a new id never rebinds, returns or reads another
    session's row, so a made-up ``assignmentId`` for a worker who holds the HIT costs its maker a draft
    and the worker nothing, and the worker's own session is the one submitted and posted to MTurk. A
    worker who returned the HIT on MTurk and accepted it again arrives with a fresh id and a fresh
    session.

    MTurk cannot confirm an assignment before it is submitted, so its sessions start unconfirmed
    (``vouched`` False, :attr:`PlatformTraits.vouches_at_arrival`): they hold no slot (MTurk's
    MaxAssignments limits the genuine ones) and count for the worker's cap only on the worker's arrivals
    from the same client address (``meta["client"]``, :func:`worker.admission.client_key`), so a worker
    holding several HITs at once is capped and made-up ids opened elsewhere use up nothing; sync or
    review confirm the submitted ones with MTurk before they count, are approved or paid.

    Raises:
        ClaimRefused: the id is another worker's or another HIT's; the batch is closed, the worker
            blocked or capped, the HIT closed or its slots held by confirmed work; or the platform
            already vouched for this worker's work on this HIT.
    """
    vouched = traits_for(batch.provider).vouches_at_arrival
    try:
        with transaction.atomic():
            locked_hit = HIT.objects.select_for_update(of=("self",)).filter(pk=hit.pk).order_by("pk").first()
            if locked_hit is None:
                raise ClaimRefused("This HIT no longer exists.", status=404)
            session = (
                Assignment.objects.select_for_update().filter(_session_of(hit, worker, platform_ref)).first()
            )
            if session is not None:
                return _resume_session(session, batch, hit, worker)
            _lock_worker(worker)
            counted = (
                Assignment.objects.filter(hit=hit, worker=worker)
                .vouched()
                .exclude(status__in=(Assignment.Status.RETURNED, Assignment.Status.EXPIRED))
            )
            if counted.exclude(status=Assignment.Status.ACCEPTED).exists():
                raise ClaimRefused("Your work on this HIT was already submitted.", status=409)
            if counted.exists():
                raise ClaimRefused(
                    "You already have this HIT open in another session. Please go back to that session.",
                    status=409,
                )
            # the worker's caps, counted under their row lock (with their sessions from the same client)
            admission.check_can_work(batch, worker, client=(meta or {}).get("client", ""), hit=locked_hit)
            reason = admission.hit_refusal(batch, worker, locked_hit)
            if reason:
                raise ClaimRefused(reason, status=409)
            return _new_assignment(locked_hit, worker, batch, platform_ref, meta, vouched=vouched)
    except IntegrityError:
        # The same id arrived in a parallel request (double click), or a vouched session of this worker
        # on this HIT was made meanwhile: resume the id's own session, or refuse.
        session = Assignment.objects.filter(_session_of(hit, worker, platform_ref)).first()
        if session is None:
            raise ClaimRefused(
                "You already have this HIT open in another session. Please go back to that session.",
                status=409,
            ) from None
        return _resume_session(session, batch, hit, worker)


def _session_of(hit: HIT, worker: Worker, platform_ref: str) -> Q:
    """The row of a platform session: by its id, or (no id: the local crowd) the worker's on the HIT."""
    return Q(platform_ref=platform_ref) if platform_ref else Q(hit=hit, worker=worker, platform_ref="")


def _resume_session(session: Assignment, batch: Batch, hit: HIT, worker: Worker) -> Assignment:
    """The session an arrival's platform id names, when it is this worker's on this HIT (else refused).

    An id is bound to the worker and HIT it first arrived with: another worker id or HIT id with it
    opens nothing (MTurk issues an id for one worker on one HIT).
    """
    if session.worker_id != worker.pk or session.hit_id != hit.pk:
        platform = traits_for(batch.provider).short_name
        raise ClaimRefused(
            f"This assignment belongs to another worker or HIT. Please open the HIT again from {platform}.",
            status=403,
        )
    if session.status == Assignment.Status.ACCEPTED:
        admission.check_can_work(batch, worker, resuming=True)
    return session


def return_assignment(assignment: Assignment) -> None:
    """The worker gives the HIT back; its slot is free again (the draft is kept for a reopen)."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        locked.return_()
    logger.info("Worker(%s) returned Assignment(%s)", assignment.worker_id, assignment.pk)


def available_batches_for(worker: Worker) -> list[tuple[Batch, int]]:
    """Published local batches that admit ``worker`` with at least one HIT they could take, and how many."""
    counts: dict[int, int] = {}
    for batch_id in (
        HIT.objects.available_for(worker)
        .filter(batch__provider__in=hosted_platforms())
        .values_list("batch", flat=True)
    ):
        counts[batch_id] = counts.get(batch_id, 0) + 1
    batches = Batch.objects.filter(pk__in=counts).order_by("created")
    return [(b, counts[b.pk]) for b in batches if admission.admits(b, worker)]
