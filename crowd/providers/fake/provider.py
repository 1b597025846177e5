"""An in-memory ``CrowdProvider`` for tests of code that drives providers (tasks, services, views).

It keeps batches, submissions, payments, blocks and qualifications in dicts, enforces the same rules as
the real platforms (only SUBMITTED work can be approved or rejected, a payment key pays once), and lets
a test play the worker (``simulate_submission``). No network, no database.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Optional

from crowd.providers import errors
from crowd.providers.base import (
    CrowdProvider,
    PaymentRecord,
    PaymentResult,
    PaymentState,
    PaymentStatus,
    PaymentStore,
    PlatformSubmission,
    PublishedBatch,
    PublishedUnit,
    PublishListener,
    PublishRequest,
    PublishUnit,
    ReviewResult,
    SubmissionStatus,
    already_paid,
)
from crowd.providers.costs import NO_FEES


class FakeProvider(CrowdProvider):
    """A platform in memory; every state change is also appended to ``calls`` for assertions.

    It declares every trait (tests/unit/crowd/test_platform_traits.py checks): an external platform
    with a unit per HIT, as MTurk, so a batch stored with ``provider="fake"`` takes the code paths of a
    platform batch.
    """

    name = "fake"
    short_name = "fake platform"
    external = True
    unit_per_hit = True
    vouches_at_arrival = False
    publish_retry_safe = True
    stop_is_final = False
    returns_on_platform = False
    min_rejection_chars = 0
    bonus_record_readable = False
    frame_origins = ()
    fees = NO_FEES
    config_keys = ()
    rejection_categories = frozenset()
    worker_id = None  # tests name its workers; no release holds them
    label = "Fake platform (tests)"
    options = MappingProxyType({})
    platform_auto_approval_seconds = 0  # the fake approves nothing by itself
    attention_failures_to_reject = 0  # the fake sets no attention-check policy
    completion_uses_code = False  # crowdqa thanks the worker (the inherited completion)
    provider_path = "crowd.providers.fake.provider:FakeProvider"

    def __init__(self) -> None:
        self.sandbox = True
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.requests: dict[str, PublishRequest] = {}
        self.published: dict[str, PublishedBatch] = {}
        self.stopped: set[str] = set()
        self.submissions: dict[str, PlatformSubmission] = {}
        self.capacity: dict[str, int] = {}
        self.paid: list[tuple[str, str, int]] = []  # (worker, assignment, cents)
        self.blocked: set[str] = set()
        self.qualifications: dict[str, dict[str, int]] = {}
        self.messages: list[tuple[str, str, str]] = []
        self.calls: list[tuple[str, Any]] = []
        self._added: dict[str, dict[str, str]] = {}  # batch id -> unit -> HIT added after publish
        self.pay_delay = 0.0
        """Seconds ``bonus`` waits between reading the store and paying: lets a test overlap two calls."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FakeProvider:
        """Build an empty fake (configuration is ignored)."""
        return cls()

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def publish(self, request: PublishRequest, listener: Optional[PublishListener] = None) -> PublishedBatch:
        """Record the request; one fake HIT per unit. A retried publish finds the batch it created."""
        if request.batch_ref in self.published:
            return self.published[request.batch_ref]
        batch_id = self._new_id("BATCH")
        units = tuple(PublishedUnit(u.local_ref, self._new_id("HIT")) for u in request.effective_units())
        self.requests[batch_id] = request
        for unit in units:
            self.capacity[unit.platform_id] = request.assignments
        self.calls.append(("publish", request.batch_ref))
        published = PublishedBatch(
            self.name, request.batch_ref, batch_id, units, sandbox=True, completion_code="FAKECODE"
        )
        self.published[request.batch_ref] = published
        return published

    def add_units(
        self, batch: PublishedBatch, request: PublishRequest, units: Sequence[PublishUnit]
    ) -> tuple[PublishedUnit, ...]:
        """Add one fake HIT per new unit; a unit already added keeps its HIT."""
        with self._lock:
            known = {u.local_ref: u for u in batch.units}
            for unit, platform_id in self._added.get(batch.platform_batch_id, {}).items():
                known.setdefault(unit, PublishedUnit(unit, platform_id))
            result = []
            for unit in units:
                if unit.local_ref not in known:
                    known[unit.local_ref] = PublishedUnit(unit.local_ref, self._new_id("HIT"))
                    self.capacity[known[unit.local_ref].platform_id] = request.assignments
                    self._added.setdefault(batch.platform_batch_id, {})[unit.local_ref] = known[
                        unit.local_ref
                    ].platform_id
                    self.calls.append(("add_unit", unit.local_ref))
                result.append(known[unit.local_ref])
            return tuple(result)

    def simulate_submission(
        self, unit_platform_id: str, worker_id: str, answers: Optional[Mapping[str, Sequence[str]]] = None
    ) -> PlatformSubmission:
        """Play a worker submitting one assignment of a unit; return it.

        Raises:
            InvalidRequestError: the unit is full, stopped, or the worker is blocked or already did it.
        """
        with self._lock:
            if worker_id in self.blocked:
                raise errors.InvalidRequestError(f"Worker({worker_id}) is blocked", platform="fake")
            if any(
                s.platform_unit_id == unit_platform_id and s.worker_id == worker_id
                for s in self.submissions.values()
            ):
                raise errors.InvalidRequestError(
                    f"Worker({worker_id}) already did unit {unit_platform_id}", platform="fake"
                )
            if self.capacity.get(unit_platform_id, 0) <= 0:
                raise errors.InvalidRequestError(
                    f"unit {unit_platform_id} has no assignment left", platform="fake"
                )
            self.capacity[unit_platform_id] -= 1
            sub = PlatformSubmission(
                platform_assignment_id=self._new_id("ASG"),
                worker_id=worker_id,
                status=SubmissionStatus.SUBMITTED,
                platform_unit_id=unit_platform_id,
                submitted_at=datetime.now(UTC),
                answers={k: tuple(v) for k, v in (answers or {}).items()},
                platform_status="Submitted",
            )
            self.submissions[sub.platform_assignment_id] = sub
            return sub

    def list_submissions(
        self, batch: PublishedBatch, statuses: Optional[Sequence[SubmissionStatus]] = None
    ) -> list[PlatformSubmission]:
        """Return the batch's submissions."""
        units = set(batch.unit_ids())
        return [
            s
            for s in self.submissions.values()
            if s.platform_unit_id in units and (not statuses or s.status in statuses)
        ]

    def add_assignments(self, batch: PublishedBatch, unit_platform_id: str, count: int, token: str) -> None:
        """Add capacity to a unit once per token."""
        if ("add_assignments", token) in self.calls:
            return
        self.capacity[unit_platform_id] = self.capacity.get(unit_platform_id, 0) + count
        self.calls.append(("add_assignments", token))

    def stop(self, batch: PublishedBatch) -> None:
        """Stop the batch: no capacity left."""
        self.stopped.add(batch.platform_batch_id)
        for unit_id in batch.unit_ids():
            self.capacity[unit_id] = 0
        self.calls.append(("stop", batch.batch_ref))

    def _review(self, assignment_id: str, wanted: SubmissionStatus) -> ReviewResult:
        with self._lock:
            sub = self.submissions.get(assignment_id)
            if sub is None:
                raise errors.NotFoundError(f"Assignment({assignment_id}) does not exist", platform="fake")
            if sub.status == wanted:
                return ReviewResult(assignment_id, wanted, changed=False)
            if sub.status != SubmissionStatus.SUBMITTED:
                raise errors.AlreadyDoneError(
                    f"Assignment({assignment_id}) is {sub.status.value}", platform="fake"
                )
            self.submissions[assignment_id] = replace(sub, status=wanted, platform_status=wanted.value)
            self.calls.append((wanted.value, assignment_id))
            return ReviewResult(assignment_id, wanted)

    def approve(self, batch: PublishedBatch, platform_assignment_id: str, feedback: str = "") -> ReviewResult:
        """Approve a submitted assignment."""
        return self._review(platform_assignment_id, SubmissionStatus.APPROVED)

    def reject(
        self, batch: PublishedBatch, platform_assignment_id: str, reason: str, category: str = "OTHER"
    ) -> ReviewResult:
        """Reject a submitted assignment (needs a reason)."""
        if not reason.strip():
            raise errors.InvalidRequestError("a rejection needs a reason", platform="fake")
        return self._review(platform_assignment_id, SubmissionStatus.REJECTED)

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
        """Pay once per key, recording the payment in ``paid``."""
        record = payments.get(idempotency_key)
        done = already_paid(record, worker_id)
        if done is not None:
            return done
        if self.pay_delay:
            time.sleep(self.pay_delay)
        ref = f"fake-bonus-{idempotency_key}"
        with self._lock:
            self.paid.append((worker_id, platform_assignment_id, amount_cents))
        payments.put(PaymentRecord(idempotency_key, PaymentState.PAID, worker_id, amount_cents, ref))
        return PaymentResult(idempotency_key, PaymentStatus.PAID, ref, amount_cents, worker_id)

    def block_worker(self, worker_id: str, reason: str) -> None:
        """Block a worker."""
        self.blocked.add(worker_id)

    def unblock_worker(self, worker_id: str, reason: str) -> None:
        """Unblock a worker."""
        self.blocked.discard(worker_id)

    def create_qualification(self, name: str, description: str) -> str:
        """Create a qualification."""
        qid = self._new_id("QUAL")
        self.qualifications[qid] = {}
        return qid

    def qualify_worker(self, worker_id: str, qualification_id: str, value: int = 1) -> None:
        """Grant a qualification."""
        if qualification_id not in self.qualifications:
            raise errors.NotFoundError(f"Qualification({qualification_id}) does not exist", platform="fake")
        self.qualifications[qualification_id][worker_id] = value

    def notify_workers(
        self, worker_ids: Sequence[str], subject: str, message: str, batch: Optional[PublishedBatch] = None
    ) -> None:
        """Record the messages."""
        self.messages.extend((w, subject, message) for w in worker_ids)
