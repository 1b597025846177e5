"""The contract every ``CrowdProvider`` keeps, written once and run for each platform.

A subclass per provider (``tests/crowd/test_provider_contract.py``, as Mephisto's ``crowd_provider_tester``)
supplies a *harness*: how to build the provider against its stand-in (MTurk: the boto3 fake server; Prolific:
the HTTP fake; local: the database; the in-memory fake) and how a worker does work there. The tests below
then drive the provider only through the ``CrowdProvider`` interface, and check each operation with its
idempotency promise: a launch retried finds what the first created, a decision made twice is one
decision, a bonus retried with the same key is one payment, a block or a pause repeated changes nothing.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Optional

import pytest

from crowd.providers.arrival import Finished
from crowd.providers.base import (
    CrowdProvider,
    InMemoryPaymentStore,
    PaymentStatus,
    PublishedBatch,
    PublishRequest,
    PublishUnit,
    SubmissionStatus,
)
from crowd.providers.errors import AlreadyDoneError, InvalidRequestError
from crowd.providers.traits import completion_for, parse_arrival

#: A rejection reason every platform takes (Prolific wants 100 characters or more).
REASON = (
    "The questions were not about the syllabus you were given, and none of the answers can be found in it; "
    "please read the instructions again."
)


class ProviderHarness(abc.ABC):
    """What the contract needs from one platform's stand-in."""

    provider: CrowdProvider
    config: Mapping[str, Any] = {}

    def request(self, units: int = 2, assignments: int = 2) -> PublishRequest:
        """A launch request with ``units`` units (local: the batch's HITs)."""
        return PublishRequest(
            batch_ref="contract-1",
            title="Write questions about a syllabus",
            description="Read a syllabus and write question-answer pairs.",
            external_url="https://crowdqa.example.org/hit/7",
            reward_cents=150,
            assignments=assignments,
            duration_seconds=600,
            units=tuple(PublishUnit(f"u{i}") for i in range(units)),
        )

    @abc.abstractmethod
    def start(
        self, batch: PublishedBatch, unit_id: str, worker_id: str
    ) -> tuple[str, Optional[dict[str, str]]]:
        """A worker starts a unit: the platform's assignment id and the URL parameters they arrive with
        (None for a platform whose workers do not arrive through a link).

        Raises:
            Exception: the platform refused to let the worker start (stopped, paused, blocked, full).
        """

    @abc.abstractmethod
    def finish(self, batch: PublishedBatch, assignment_id: str) -> None:
        """The worker submits the assignment they started (answers stored, back to the platform)."""

    def settle(self, assignment_id: str, status: SubmissionStatus) -> None:  # noqa: B027 - a hook most leave empty
        """Record a decision the provider accepted where the platform keeps it (local: crowdqa's row)."""

    @abc.abstractmethod
    def bonuses_paid(self, assignment_id: str, payments: InMemoryPaymentStore) -> list[int]:
        """The bonus amounts (cents) the platform shows paid for an assignment."""

    @abc.abstractmethod
    def is_blocked(self, worker_id: str) -> bool:
        """The platform keeps the worker out."""

    def work(self, batch: PublishedBatch, unit_id: str, worker_id: str) -> str:
        """A worker starts and submits a unit; return the platform's assignment id."""
        assignment_id, _ = self.start(batch, unit_id, worker_id)
        self.finish(batch, assignment_id)
        return assignment_id

    def can_start(self, batch: PublishedBatch, unit_id: str, worker_id: str) -> bool:
        """Whether a new worker can start the unit now."""
        try:
            self.start(batch, unit_id, worker_id)
        except Exception:  # noqa: BLE001 - each stand-in refuses in its own way
            return False
        return True


class ProviderContract(abc.ABC):
    """The tests; a subclass provides the ``harness`` fixture."""

    @pytest.fixture
    @abc.abstractmethod
    def harness(self) -> ProviderHarness:
        """The platform's harness, its stand-in running."""

    # --- launch ----------------------------------------------------------------------------------------

    def test_launch__gives_one_platform_unit_per_local_unit(self, harness: ProviderHarness) -> None:
        request = harness.request(units=2)
        batch = harness.provider.publish(request)
        assert batch.provider == harness.provider.name and batch.batch_ref == request.batch_ref
        assert [u.local_ref for u in batch.units] == [u.local_ref for u in request.units]
        assert all(u.platform_id for u in batch.units) and batch.platform_batch_id
        assert harness.provider.list_submissions(batch) == []

    def test_launch__resumed_finds_what_the_first_attempt_created(self, harness: ProviderHarness) -> None:
        """A resumed publish (``resume=True``, no id recorded: the first answer was lost) adopts the units
        the first attempt put on the platform instead of creating them again."""
        assert harness.provider.publish_retry_safe
        request = harness.request(units=2)
        first = harness.provider.publish(request)
        again = harness.provider.publish(replace(request, resume=True))
        assert again.unit_ids() == first.unit_ids()
        assert again.platform_batch_id == first.platform_batch_id

    # --- arrival and completion --------------------------------------------------------------------------

    def test_arrival__names_the_assignment_the_platform_lists(self, harness: ProviderHarness) -> None:
        batch = harness.provider.publish(harness.request(units=1))
        unit = batch.units[0].platform_id
        assignment_id, params = harness.start(batch, unit, "W-arrive")
        if params is None:
            assert not harness.provider.external or not harness.provider.frame_origins
            return
        arrival = parse_arrival(params, harness.config)
        assert arrival is not None and arrival.platform == harness.provider.name
        assert (arrival.assignment_ref, arrival.worker_id) == (assignment_id, "W-arrive")
        assert arrival.hit_ref in (unit, batch.platform_batch_id)

    def test_completion__submitted_work_is_listed_and_the_worker_is_sent_back(
        self, harness: ProviderHarness
    ) -> None:
        batch = harness.provider.publish(harness.request(units=1))
        assignment_id, params = harness.start(batch, batch.units[0].platform_id, "W-done")
        harness.finish(batch, assignment_id)
        listed = {s.platform_assignment_id: s for s in harness.provider.list_submissions(batch)}
        assert listed[assignment_id].status == SubmissionStatus.SUBMITTED
        assert listed[assignment_id].worker_id == "W-done"
        assert [
            s.platform_assignment_id
            for s in harness.provider.list_submissions(batch, [SubmissionStatus.APPROVED])
        ] == []
        arrival = parse_arrival(params, harness.config) if params else None
        finished = Finished(
            submit_to=arrival.submit_to if arrival else "",
            assignment_ref=assignment_id,
            completion_code=batch.completion_code,
        )
        completion = completion_for(harness.provider.name, finished, harness.config)
        if arrival is None:
            assert completion is None  # crowdqa thanks the worker itself
        else:
            assert completion is not None and not completion.problem
            assert completion.post_to or completion.redirect_to

    # --- review ----------------------------------------------------------------------------------------

    def test_approve__twice_is_one_decision(self, harness: ProviderHarness) -> None:
        batch = harness.provider.publish(harness.request(units=1))
        assignment_id = harness.work(batch, batch.units[0].platform_id, "W-approve")
        first = harness.provider.approve(batch, assignment_id, "thanks")
        assert (first.status, first.changed) == (SubmissionStatus.APPROVED, True)
        harness.settle(assignment_id, SubmissionStatus.APPROVED)
        again = harness.provider.approve(batch, assignment_id, "thanks")
        assert (again.status, again.changed) == (SubmissionStatus.APPROVED, False)
        (listed,) = harness.provider.list_submissions(batch)
        assert listed.status == SubmissionStatus.APPROVED

    def test_reject__twice_is_one_decision_and_an_approved_assignment_stays_approved(
        self, harness: ProviderHarness
    ) -> None:
        batch = harness.provider.publish(harness.request(units=2))
        rejected = harness.work(batch, batch.units[0].platform_id, "W-reject1")
        first = harness.provider.reject(batch, rejected, REASON)
        assert (first.status, first.changed) == (SubmissionStatus.REJECTED, True)
        harness.settle(rejected, SubmissionStatus.REJECTED)
        again = harness.provider.reject(batch, rejected, REASON)
        assert (again.status, again.changed) == (SubmissionStatus.REJECTED, False)

        approved = harness.work(batch, batch.units[1].platform_id, "W-reject2")
        harness.provider.approve(batch, approved)
        harness.settle(approved, SubmissionStatus.APPROVED)
        with pytest.raises(AlreadyDoneError):
            harness.provider.reject(batch, approved, REASON)
        statuses = {s.platform_assignment_id: s.status for s in harness.provider.list_submissions(batch)}
        assert statuses == {rejected: SubmissionStatus.REJECTED, approved: SubmissionStatus.APPROVED}

    def test_reject__a_reason_the_platform_would_refuse_is_refused_before_anything_changes(
        self, harness: ProviderHarness
    ) -> None:
        batch = harness.provider.publish(harness.request(units=1))
        assignment_id = harness.work(batch, batch.units[0].platform_id, "W-reason")
        too_short = "x" * max(harness.provider.min_rejection_chars - 1, 0)
        for reason in {"  ", too_short}:
            with pytest.raises(InvalidRequestError):
                harness.provider.reject(batch, assignment_id, reason)
        (listed,) = harness.provider.list_submissions(batch)
        assert listed.status == SubmissionStatus.SUBMITTED

    # --- payments --------------------------------------------------------------------------------------

    def test_bonus__retried_with_the_same_key_is_one_payment(self, harness: ProviderHarness) -> None:
        batch = harness.provider.publish(harness.request(units=1))
        assignment_id = harness.work(batch, batch.units[0].platform_id, "W-bonus")
        harness.provider.approve(batch, assignment_id)
        harness.settle(assignment_id, SubmissionStatus.APPROVED)
        payments = InMemoryPaymentStore()
        pay = (batch, assignment_id, "W-bonus", 75, "good questions", "bonus-contract-1", payments)
        first = harness.provider.bonus(*pay)
        again = harness.provider.bonus(*pay)
        assert (first.status, again.status) == (PaymentStatus.PAID, PaymentStatus.ALREADY_PAID)
        assert (again.amount_cents, again.worker_id) == (75, "W-bonus")
        assert harness.bonuses_paid(assignment_id, payments) == [75]

        other = harness.provider.bonus(
            batch, assignment_id, "W-bonus", 25, "more", "bonus-contract-2", payments
        )
        assert other.status == PaymentStatus.PAID
        assert sorted(harness.bonuses_paid(assignment_id, payments)) == [25, 75]

    # --- workers ---------------------------------------------------------------------------------------

    def test_block__twice_and_unblock_twice_change_nothing_more(self, harness: ProviderHarness) -> None:
        batch = harness.provider.publish(harness.request(units=2))
        harness.work(batch, batch.units[0].platform_id, "W-block")
        for _ in range(2):
            harness.provider.block_worker("W-block", "copied answers")
            assert harness.is_blocked("W-block")
        assert not harness.can_start(batch, batch.units[1].platform_id, "W-block")
        for _ in range(2):
            harness.provider.unblock_worker("W-block", "appeal accepted")
            assert not harness.is_blocked("W-block")

    # --- sync ------------------------------------------------------------------------------------------

    def test_sync__reconcile_reports_new_changed_missing_and_is_read_only(
        self, harness: ProviderHarness
    ) -> None:
        batch = harness.provider.publish(harness.request(units=2))
        one = harness.work(batch, batch.units[0].platform_id, "W-sync1")
        two = harness.work(batch, batch.units[1].platform_id, "W-sync2")
        report = harness.provider.reconcile(batch, {})
        assert {s.platform_assignment_id for s in report.new} == {one, two} and report.unchanged_count == 0

        local = {
            one: SubmissionStatus.SUBMITTED,
            two: SubmissionStatus.APPROVED,
            "gone": SubmissionStatus.SUBMITTED,
        }
        for _ in range(2):  # reconciling changes nothing, so a second run reports the same
            report = harness.provider.reconcile(batch, local)
            assert report.new == () and report.missing == ("gone",) and report.unchanged_count == 1
            assert [s.platform_assignment_id for s in report.changed] == [two]

    # --- pause, resume, stop ---------------------------------------------------------------------------

    def test_pause_resume__each_twice_and_the_platform_follows_its_traits(
        self, harness: ProviderHarness
    ) -> None:
        provider = harness.provider
        batch = provider.publish(harness.request(units=1, assignments=5))
        unit = batch.units[0].platform_id
        holds_on_platform = type(provider).pause is not CrowdProvider.pause
        provider.pause(batch)
        provider.pause(batch)
        if holds_on_platform:
            assert not harness.can_start(batch, unit, "W-paused")
        provider.resume(batch)
        provider.resume(batch)
        assert harness.can_start(batch, unit, "W-resumed") is (not provider.stop_is_final)

    def test_stop__twice_and_no_new_worker_starts_where_the_platform_lists_the_work(
        self, harness: ProviderHarness
    ) -> None:
        batch = harness.provider.publish(harness.request(units=1, assignments=5))
        started, _ = harness.start(batch, batch.units[0].platform_id, "W-before")
        harness.provider.stop(batch)
        harness.provider.stop(batch)
        if harness.provider.external:
            assert not harness.can_start(batch, batch.units[0].platform_id, "W-after")
        assert [s.platform_assignment_id for s in harness.provider.list_submissions(batch)] in ([], [started])
