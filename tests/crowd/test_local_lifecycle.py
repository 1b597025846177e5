"""The local crowd end to end through the crowd services: launch, claim, submit, review, pay, budget."""

from __future__ import annotations

import pytest
from django.db import transaction

from annotation.models import Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment
from crowd.providers.base import PaymentStatus
from crowd.services.batch_status import change_status
from crowd.services.launching import launch
from crowd.services.ledger import LedgerError
from crowd.services.lifecycle import LifecycleError
from crowd.services.review import ReviewError, approve_assignment, bonus, reject_assignment
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for
from tests.factories import make_worker
from worker.assigning import ClaimRefused, claim_next

pytestmark = pytest.mark.django_db


def _spec(**kw) -> BatchSpec:  # noqa: ANN003
    return BatchSpec(
        **{
            "kind": "sciq_question",
            "corpus": "sci",
            "provider": "local",
            "limit": 2,
            "reward_cents": 50,
            **kw,
        }
    )


def _submitted(batch: Batch, worker_id: str):  # noqa: ANN202
    assignment = claim_next(batch, make_worker(worker_id))
    assignment.submit(answers_for(assignment.hit))
    return assignment


def test_launch__local_batch_published_with_estimate(sciq_corpus) -> None:
    batch, estimate = launch(_spec(assignments=2))
    assert batch.status == Batch.Status.PUBLISHED
    assert batch.hits.count() == 2 and estimate.assignments == 4 and estimate.total_cents == 200
    assert BatchPlatformState.of(batch.pk).published["provider"] == "local"
    assert sorted(batch.hits.values_list("platform_ref", flat=True)) == sorted(
        str(pk) for pk in batch.hits.values_list("pk", flat=True)
    )


def test_approve_assignment__reward_recorded_once(sciq_corpus) -> None:
    batch, _ = launch(_spec())
    assignment = _submitted(batch, "w1")
    approve_assignment(assignment)
    approve_assignment(assignment)  # a retried click changes nothing
    assignment.refresh_from_db()
    assert assignment.status == "approved"
    rewards = Payment.objects.filter(assignment=assignment, kind=Payment.Kind.REWARD)
    assert [(p.amount_cents, p.idempotency_key) for p in rewards] == [(50, f"reward-{assignment.pk}")]


def test_reject_assignment__needs_a_reason(sciq_corpus) -> None:
    batch, _ = launch(_spec())
    assignment = _submitted(batch, "w1")
    with pytest.raises(ReviewError, match="reason"):
        reject_assignment(assignment, "  ")
    reject_assignment(assignment, "The question does not match the passage.")
    assignment.refresh_from_db()
    assert assignment.status == "rejected" and not assignment.payments.exists()


def test_bonus__retried_twice_pays_once(sciq_corpus) -> None:
    batch, _ = launch(_spec())
    assignment = _submitted(batch, "w1")
    approve_assignment(assignment)
    first = bonus(assignment, 25, "Excellent question")
    second = bonus(assignment, 25, "Excellent question")
    third = bonus(assignment, 25, "Excellent question")
    assert first.status == PaymentStatus.PAID
    assert second.status == third.status == PaymentStatus.ALREADY_PAID
    rows = Payment.objects.filter(kind=Payment.Kind.BONUS)
    assert [(r.amount_cents, r.status) for r in rows] == [(25, Payment.Status.CONFIRMED)]


def test_bonus__refused_inside_a_transaction(sciq_corpus) -> None:
    batch, _ = launch(_spec())
    assignment = _submitted(batch, "w1")
    with pytest.raises(LedgerError, match="outside transaction.atomic"), transaction.atomic():
        bonus(assignment, 25, "Excellent question")
    assert not Payment.objects.exists()


def test_launch__over_budget_refused_and_nothing_kept(sciq_corpus) -> None:
    with pytest.raises(LifecycleError, match="exceeds the budget cap"):
        launch(_spec(budget_cap_cents=99))
    assert not Batch.objects.exists()


def test_sync_batch__budget_cap_stops_claims(sciq_corpus) -> None:
    batch, _ = launch(_spec(budget_cap_cents=100))
    assignment = _submitted(batch, "w1")
    approve_assignment(assignment)
    bonus(assignment, 40, "Thorough work")
    with pytest.raises(ReviewError, match="budget"):
        bonus(assignment, 40, "Another bonus")
    counts = sync_batch(batch)
    batch.refresh_from_db()
    assert counts["budget_stopped"] is True and batch.status == Batch.Status.PAUSED
    assert (
        BatchPlatformState.of(batch.pk).budget_stopped_at is not None
        and "budget_stopped" not in batch.options
    )
    with pytest.raises(ClaimRefused):
        claim_next(batch, make_worker("w2"))


def test_change_status__pause_resume_cancel(sciq_corpus) -> None:
    batch, _ = launch(_spec())
    change_status(batch, "pause")
    assert batch.status == Batch.Status.PAUSED
    change_status(batch, "resume")
    assert batch.status == Batch.Status.PUBLISHED
    change_status(batch, "cancel")
    assert batch.status == Batch.Status.CANCELLED
    with pytest.raises(LifecycleError, match="unknown action"):
        change_status(batch, "explode")
