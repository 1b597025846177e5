"""The crowd-provider interface: what crowdqa asks of MTurk, Prolific and the local crowd.

Life cycle of a batch, as the caller (a Celery task or a management command) drives it:

1. ``publish(PublishRequest)`` puts the batch on the platform and returns a ``PublishedBatch`` with the
   platform's references (HIT type + one HIT per unit on MTurk, one study on Prolific). Store them.
2. Workers arrive through ``external_url`` (MTurk adds ``assignmentId``/``hitId``/``workerId``/
   ``turkSubmitTo``; Prolific fills ``{{%PROLIFIC_PID%}}``...), answer on crowdqa's HIT page, and are sent
   back to the platform (``externalSubmit`` on MTurk, the completion URL on Prolific).
3. ``list_submissions`` (polling, every page) or webhooks tell crowdqa what the platform knows;
   ``reconcile`` compares it with the local state after a crash.
4. ``approve`` / ``reject`` / ``bonus`` settle each submission. ``bonus`` takes an idempotency key from the
   caller and a ``PaymentStore``: a key is paid at most once, whatever crashes in between.
5. ``block_worker``, ``qualify_worker``, ``notify_workers``, ``add_assignments``, ``add_units`` (HITs
   created after publication, e.g. SciQ stage 2) and ``stop`` manage the workforce and the batch.

Everything that crosses this boundary is a frozen dataclass; money is in integer cents. Errors are the
``errors.ProviderError`` hierarchy. Every method that changes platform state must be safe to call twice
with the same arguments (the caller retries after crashes): it either does nothing the second time or
raises ``AlreadyDoneError`` naming the current state.
"""

from __future__ import annotations

import abc
import enum
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Optional, Protocol, runtime_checkable

from crowd.providers.listing import ReconcileReport as ReconcileReport
from crowd.providers.listing import SubmissionPage as SubmissionPage
from crowd.providers.traits import PlatformTraits

logger = logging.getLogger(__name__)


class SubmissionStatus(enum.StrEnum):
    """Platform-neutral status of one worker's work on one unit."""

    ACTIVE = "active"  # accepted / started, not submitted yet
    SUBMITTED = "submitted"  # waiting for review (MTurk "Submitted", Prolific "AWAITING REVIEW")
    APPROVED = "approved"
    REJECTED = "rejected"
    RETURNED = "returned"  # the worker gave it back (Prolific RETURNED)
    TIMED_OUT = "timed_out"
    PROCESSING = "processing"  # Prolific: an approve/reject is being applied


class PaymentStatus(enum.StrEnum):
    """Outcome of a payment call."""

    PAID = "paid"  # this call paid
    ALREADY_PAID = "already_paid"  # an earlier call with the same key paid; nothing was sent now
    UNCONFIRMED = "unconfirmed"  # a pay request was sent earlier but its answer was lost: never resent


class PaymentState(enum.StrEnum):
    """What a ``PaymentStore`` remembers about one idempotency key (a write-ahead log)."""

    CREATED = "created"  # platform-side object exists (Prolific bulk bonus), nothing paid yet
    PAY_REQUESTED = "pay_requested"  # written just before the paying call: the call may have happened
    PAID = "paid"  # the platform confirmed the payment
    REFUSED = "refused"  # the platform refused the pay request: nothing was paid, a new attempt may pay


@dataclass(frozen=True)
class PublishUnit:
    """One unit of work (a local HIT) inside a batch.

    Attributes:
        local_ref: crowdqa's id of the HIT (used in annotations and idempotency tokens).
        external_url: the page a worker opens for this unit; empty means the batch's ``external_url``.
    """

    local_ref: str
    external_url: str = ""


@dataclass(frozen=True)
class PublishRequest:
    """Everything a platform needs to advertise a batch.

    Attributes:
        batch_ref: crowdqa's batch id; becomes the MTurk ``RequesterAnnotation`` / Prolific internal name.
        title, description, keywords: what workers see.
        external_url: the arrival URL (Prolific study URL; MTurk units without their own URL).
        reward_cents: payment per assignment / place.
        assignments: assignments per unit (MTurk ``MaxAssignments``); on Prolific the study gets
            ``assignments * len(units)`` places (at least ``assignments``).
        duration_seconds: time a worker has for one assignment (MTurk) / estimated completion time
            (Prolific, rounded up to minutes).
        lifetime_seconds: how long the batch stays listed (MTurk ``LifetimeInSeconds``).
        auto_approve_seconds: MTurk ``AutoApprovalDelayInSeconds``.
        units: the local HITs; empty means one unit named after the batch.
        locales: ISO country codes workers must be in (empty: anywhere).
        min_approval_rate: percent (MTurk 000000000000000000L0, Prolific approval-rate filter).
        min_approved: minimum number of approved HITs (MTurk 00000000000000000040).
        require_qualifications: ids a worker must hold (screening qualification on MTurk, allow-list
            participant group on Prolific).
        exclude_qualifications: ids a worker must NOT hold (MTurk ``DoesNotExist``: workers who already
            did a batch, soft blocks; Prolific block-list groups).
        frame_height: MTurk ExternalQuestion frame height in pixels (0 = full window).
        completion_code: Prolific completion code; generated when empty.
        extra: the platform's own launch settings from ``Batch.options`` (its traits' ``options``,
            e.g. ``{"prolific_filters": [...]}``).
        resume: an earlier attempt may have left work on the platform (it failed or was killed): find
            and adopt what it made (MTurk HITs by RequesterAnnotation, the Prolific study by its internal
            name) before creating anything.
        platform_batch_id: the HIT type / study an earlier attempt created, when it was recorded.
    """

    batch_ref: str
    title: str
    description: str
    external_url: str
    reward_cents: int
    assignments: int = 1
    duration_seconds: int = 3600
    lifetime_seconds: int = 7 * 24 * 3600
    auto_approve_seconds: int = 3 * 24 * 3600
    keywords: tuple[str, ...] = ()
    units: tuple[PublishUnit, ...] = ()
    locales: tuple[str, ...] = ()
    min_approval_rate: Optional[int] = None
    min_approved: Optional[int] = None
    require_qualifications: tuple[str, ...] = ()
    exclude_qualifications: tuple[str, ...] = ()
    frame_height: int = 0
    completion_code: str = ""
    extra: Mapping[str, object] = field(default_factory=dict)
    resume: bool = False
    platform_batch_id: str = ""

    def __post_init__(self) -> None:
        if self.reward_cents < 0:
            raise ValueError(f"batch {self.batch_ref}: reward_cents must be >= 0, got {self.reward_cents}")
        if self.assignments < 1:
            raise ValueError(f"batch {self.batch_ref}: assignments must be >= 1, got {self.assignments}")
        if self.duration_seconds < 30:
            raise ValueError(
                f"batch {self.batch_ref}: duration_seconds must be >= 30, got {self.duration_seconds}"
            )

    def effective_units(self) -> tuple[PublishUnit, ...]:
        """Return the units, or a single unit named after the batch when none were given."""
        return self.units or (PublishUnit(local_ref=self.batch_ref),)


class PublishListener:
    """Told of a publish's progress as it happens; the default does nothing.

    Why: a publish of a thousand HITs takes minutes and can die at any point. The caller records the
    platform batch (a Prolific study) the moment it exists, before any further call, so a later attempt
    resumes it instead of making another, and shows progress per unit.
    """

    def platform_batch(self, platform_batch_id: str, completion_code: str = "") -> None:
        """The HIT type / study exists on the platform (created now or adopted)."""

    def unit(self, unit: PublishedUnit, adopted: bool) -> None:
        """One unit is on the platform (``adopted``: an earlier attempt had made it)."""


@dataclass(frozen=True)
class PublishedUnit:
    """A unit as the platform knows it (MTurk HIT id; on Prolific the study id)."""

    local_ref: str
    platform_id: str


@dataclass(frozen=True)
class PublishedBatch:
    """The platform references of a published batch: store them, every later call needs them.

    Attributes:
        provider: provider name (``mturk``, ``prolific``, ``fake``, ``local``).
        batch_ref: crowdqa's batch id.
        platform_batch_id: MTurk HIT type id / Prolific study id.
        units: one ``PublishedUnit`` per local unit.
        sandbox: True when published to a sandbox / test environment.
        completion_code: Prolific completion code ("" on MTurk).
        preview_url: where a researcher can look at the batch on the platform.
    """

    provider: str
    batch_ref: str
    platform_batch_id: str
    units: tuple[PublishedUnit, ...]
    sandbox: bool = True
    completion_code: str = ""
    preview_url: str = ""

    def unit_ids(self) -> tuple[str, ...]:
        """Return the distinct platform ids of the units, in order."""
        return tuple(dict.fromkeys(u.platform_id for u in self.units))


@dataclass(frozen=True)
class PlatformSubmission:
    """One worker's assignment / submission as the platform reports it.

    Attributes:
        platform_assignment_id: MTurk AssignmentId / Prolific submission id.
        worker_id: MTurk WorkerId / Prolific participant id (never exported; pseudonymise it).
        status: the neutral status.
        platform_unit_id: MTurk HITId / Prolific study id.
        submitted_at: when the worker submitted (aware UTC), if known.
        accepted_at: when the worker accepted / started, if known.
        answers: form answers the platform stored (MTurk QuestionFormAnswers), each field with all its
            values (repeatable fields such as ``flag``); ``None`` when the platform keeps none.
        platform_status: the raw platform status string, for messages and debugging.
        completion_code: the code the worker brought back to the platform (Prolific ``study_code``;
            "" on MTurk): evidence of work when crowdqa holds none.
    """

    platform_assignment_id: str
    worker_id: str
    status: SubmissionStatus
    platform_unit_id: str = ""
    submitted_at: Optional[datetime] = None
    accepted_at: Optional[datetime] = None
    answers: Optional[Mapping[str, tuple[str, ...]]] = None
    platform_status: str = ""
    completion_code: str = ""

    def evidence(self) -> dict[str, object]:
        """What the platform shows of this work: status, completion code, seconds from start to submit."""
        seconds = None
        if self.submitted_at is not None and self.accepted_at is not None:
            seconds = round((self.submitted_at - self.accepted_at).total_seconds())
        return {
            "platform_status": self.platform_status,
            "completion_code": self.completion_code,
            "seconds": seconds,
            "answers_on_platform": bool(self.answers),
        }


@dataclass(frozen=True)
class ReviewResult:
    """Result of approve / reject.

    Attributes:
        platform_assignment_id: the assignment / submission.
        status: the status it now has.
        changed: False when it already had that status (a retried call).
    """

    platform_assignment_id: str
    status: SubmissionStatus
    changed: bool = True


@dataclass(frozen=True)
class PaymentResult:
    """Result of a bonus payment.

    Attributes:
        idempotency_key: the caller's key.
        status: PAID, ALREADY_PAID or UNCONFIRMED (see ``PaymentStatus``).
        platform_ref: the platform's reference (MTurk: the UniqueRequestToken; Prolific: bulk bonus id).
        amount_cents: the amount paid to the worker (fees not included).
        worker_id: who was paid.
    """

    idempotency_key: str
    status: PaymentStatus
    platform_ref: str
    amount_cents: int
    worker_id: str


@dataclass(frozen=True)
class PaymentRecord:
    """What a ``PaymentStore`` keeps for one idempotency key."""

    key: str
    state: PaymentState
    worker_id: str
    amount_cents: int
    platform_ref: str = ""
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    error: str = ""
    setups_in_doubt: int = 0  # platform-side set-ups (Prolific bulk bonuses) sent without an answer


@runtime_checkable
class PaymentStore(Protocol):
    """Durable memory of payments by idempotency key (crowd.services.ledger backs it with the ledger table).

    ``put`` must be durable when it returns (committed, not inside the caller's open transaction):
    the provider writes ``PAY_REQUESTED`` *before* the paying call so that a crash right after the call
    cannot lead to a second payment.
    """

    def get(self, key: str) -> Optional[PaymentRecord]:
        """Return the record for ``key`` or None."""
        ...

    def put(self, record: PaymentRecord) -> None:
        """Create or replace the record for ``record.key``."""
        ...


@runtime_checkable
class DedupStore(Protocol):
    """Remembers which webhook events were already handled."""

    def add(self, key: str) -> bool:
        """Record ``key``; return True when it was new, False when it was seen before (atomically)."""
        ...


class InMemoryPaymentStore:
    """A thread-safe ``PaymentStore`` in a dict: for tests and the demo, not for money that matters."""

    def __init__(self) -> None:
        self._records: dict[str, PaymentRecord] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[PaymentRecord]:
        """Return the record for ``key`` or None."""
        with self._lock:
            return self._records.get(key)

    def put(self, record: PaymentRecord) -> None:
        """Create or replace the record for ``record.key``."""
        with self._lock:
            self._records[record.key] = record

    def records(self) -> list[PaymentRecord]:
        """Return every record (for tests)."""
        with self._lock:
            return list(self._records.values())


class InMemoryDedupStore:
    """A thread-safe ``DedupStore`` in a set."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def add(self, key: str) -> bool:
        """Record ``key``; return True when it was new."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


def already_paid(record: Optional[PaymentRecord], worker_id: str) -> Optional[PaymentResult]:
    """The ``ALREADY_PAID`` result when ``record`` says its key was paid, else None.

    Every provider's ``bonus`` starts with this check: a retried call must not pay again.
    """
    if record is None or record.state != PaymentState.PAID:
        return None
    return PaymentResult(
        record.key, PaymentStatus.ALREADY_PAID, record.platform_ref, record.amount_cents, worker_id
    )


def advance_payment(
    store: PaymentStore, record: PaymentRecord, state: PaymentState, **changes: str | int
) -> PaymentRecord:
    """Write ``record`` with a new state (and fields) to ``store`` and return it.

    Args:
        store: the payment store.
        record: the current record.
        state: the new state.
        **changes: other fields to change (``platform_ref``, ``error`` for a refusal).

    Returns:
        The record as written.
    """
    new = replace(record, state=state, updated_at=datetime.now(UTC), **changes)
    store.put(new)
    return new


class CrowdProvider(PlatformTraits, abc.ABC):
    """A crowd platform behind one interface (Mephisto's ``CrowdProvider``, Potato's provider hooks).

    Subclasses inherit their platform's traits (``name``, ``external``...: :mod:`crowd.providers.traits`)
    and implement the abstract methods. ``reconcile`` has a working default built
    on ``list_submissions``. A DB-backed local provider implements the same methods on its models.
    """

    sandbox: bool = True

    # --- batch ---------------------------------------------------------------------------------------

    @abc.abstractmethod
    def publish(self, request: PublishRequest, listener: Optional[PublishListener] = None) -> PublishedBatch:
        """Advertise a batch; return the platform references to store.

        Safe to retry: a unit already created by an earlier attempt is found again, not duplicated
        (``request.resume`` asks the provider to look for such units first). ``listener`` hears of
        the platform batch and each unit as soon as they exist.

        Raises:
            ProviderError: the platform refused (``InvalidRequestError``, ``InsufficientFundsError``...).
        """

    @abc.abstractmethod
    def list_submissions(
        self, batch: PublishedBatch, statuses: Optional[Sequence[SubmissionStatus]] = None
    ) -> list[PlatformSubmission]:
        """Return every submission of the batch (all pages), optionally only some statuses."""

    def add_units(
        self, batch: PublishedBatch, request: PublishRequest, units: Sequence[PublishUnit]
    ) -> tuple[PublishedUnit, ...]:
        """Put more units on an already-published batch; return their platform references.

        Safe to retry: a unit an earlier call already put on the platform is found again, never
        duplicated (MTurk: the HIT's UniqueRequestToken and RequesterAnnotation; Prolific: places are set
        to an absolute total, never incremented).

        Args:
            batch: the published batch, with the units it already has.
            request: the batch's current ``PublishRequest`` (reward, assignments, URL...).
            units: the new units.

        Raises:
            ProviderError: the platform refused.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot add units to a published batch")

    @abc.abstractmethod
    def add_assignments(self, batch: PublishedBatch, unit_platform_id: str, count: int, token: str) -> None:
        """Add ``count`` assignments (MTurk) / places (Prolific) to a unit; ``token`` makes it retry-safe."""

    @abc.abstractmethod
    def stop(self, batch: PublishedBatch) -> None:
        """Stop the batch: no new worker can start it (MTurk: expire every HIT; Prolific: STOP)."""

    def pause(self, batch: PublishedBatch) -> None:
        """Hold the batch until ``resume``; by default nothing to tell the platform (crowdqa hands out no
        work of a paused batch). A platform whose stop is final pauses by stopping (``stop_is_final``)."""

    def resume(self, batch: PublishedBatch) -> None:
        """List a paused batch again; by default nothing to tell the platform."""

    # --- submissions ---------------------------------------------------------------------------------

    @abc.abstractmethod
    def approve(self, batch: PublishedBatch, platform_assignment_id: str, feedback: str = "") -> ReviewResult:
        """Approve a submitted assignment (pays its reward); ``changed=False`` if already approved.

        Raises:
            AlreadyDoneError: it is in another final state (the message names it).
        """

    @abc.abstractmethod
    def reject(
        self, batch: PublishedBatch, platform_assignment_id: str, reason: str, category: str = "OTHER"
    ) -> ReviewResult:
        """Reject a submitted assignment with a reason the worker reads (``category``: Prolific's).

        Raises:
            InvalidRequestError: the reason does not meet the platform's rules (checked before sending).
            AlreadyDoneError: it is in another final state.
        """

    @abc.abstractmethod
    def bonus(
        self,
        batch: PublishedBatch,
        platform_assignment_id: str,
        worker_id: str,
        amount_cents: int,
        reason: str,
        idempotency_key: str,
        payments: PaymentStore,
    ) -> PaymentResult:
        """Pay a bonus at most once per ``idempotency_key``, recording progress in ``payments``.

        The caller must derive the key from what is being paid (e.g. ``bonus-<assignment pk>-<rule>``),
        never from time, so that a retried task reuses it.
        """

    def submission(self, batch: PublishedBatch, platform_assignment_id: str) -> Optional[PlatformSubmission]:
        """The platform's own record of one submission, checked before it is approved or paid.

        None when this platform has no such lookup (then nothing is checked here).

        Raises:
            NotFoundError: the platform does not know this id (made up by whoever opened the HIT).
            ProviderError: the platform did not answer.
        """
        return None

    def bonuses_on_record(self, batch: PublishedBatch, platform_assignment_id: str) -> Optional[list[int]]:
        """The amounts (cents) the platform's own record shows paid as bonuses for an assignment.

        Used to settle a payment whose answer was lost (UNCONFIRMED). None when the platform keeps no
        record crowdqa can read (then a person checks the dashboard).
        """
        return None

    # --- workers -------------------------------------------------------------------------------------

    def account_currency(self) -> str:
        """The ISO 4217 code this account pays rewards, bonuses and fees in (MTurk and local: USD)."""
        return "USD"

    @abc.abstractmethod
    def block_worker(self, worker_id: str, reason: str) -> None:
        """Keep a worker out of every future batch (idempotent)."""

    @abc.abstractmethod
    def unblock_worker(self, worker_id: str, reason: str) -> None:
        """Undo ``block_worker`` (idempotent)."""

    @abc.abstractmethod
    def create_qualification(self, name: str, description: str) -> str:
        """Create a screening qualification / participant group; return its platform id."""

    @abc.abstractmethod
    def qualify_worker(self, worker_id: str, qualification_id: str, value: int = 1) -> None:
        """Give a worker a qualification (MTurk) / add them to a participant group (Prolific)."""

    @abc.abstractmethod
    def notify_workers(
        self, worker_ids: Sequence[str], subject: str, message: str, batch: Optional[PublishedBatch] = None
    ) -> None:
        """Send a message to workers (batched as the platform requires)."""

    # --- sync ----------------------------------------------------------------------------------------

    def submission_pages(
        self,
        batch: PublishedBatch,
        cursor: Optional[Mapping[str, Any]] = None,
        skip_units: frozenset[str] = frozenset(),
    ) -> Iterator[SubmissionPage]:
        """List the batch's submissions step by step, each step resumable from its cursor.

        Why: a sync of thousands of submissions that dies (kill, throttling that outlasts the retries)
        must not start again from the first page; the caller stores each step's ``next`` cursor and
        gives it back on the next run. By default one step lists everything (``list_submissions``).

        Args:
            batch: the published batch.
            cursor: a ``next`` (or ``start``) cursor this provider gave earlier; None from the start.
            skip_units: platform units not to read (nothing on them can change any more).
        """
        subs = tuple(s for s in self.list_submissions(batch) if s.platform_unit_id not in skip_units)
        yield SubmissionPage(submissions=subs, units=None, start=None, next=None, first=True)

    def reconcile(self, batch: PublishedBatch, local: Mapping[str, SubmissionStatus]) -> ReconcileReport:
        """Compare the platform's submissions with the local statuses by assignment id.

        Args:
            batch: the published batch.
            local: local status of each known platform assignment id.

        Returns:
            A ``ReconcileReport``; the caller creates / updates rows (this method changes nothing).
        """
        new: list[PlatformSubmission] = []
        changed: list[PlatformSubmission] = []
        unchanged = 0
        seen: set[str] = set()
        for sub in self.list_submissions(batch):
            seen.add(sub.platform_assignment_id)
            known = local.get(sub.platform_assignment_id)
            if known is None:
                new.append(sub)
            elif known != sub.status:
                changed.append(sub)
            else:
                unchanged += 1
        missing = tuple(sorted(set(local) - seen))
        logger.info(
            "Batch(%s) reconcile on %s: %d new, %d changed, %d missing, %d unchanged",
            batch.batch_ref,
            self.name,
            len(new),
            len(changed),
            len(missing),
            unchanged,
        )
        return ReconcileReport(tuple(new), tuple(changed), missing, unchanged)


def chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    """Yield consecutive slices of at most ``size`` items (MTurk notifies 100 workers per call)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
