"""Local first: a decision is validated and written in crowdqa before MTurk is told; the two never disagree.

The attack replayed: a rejection reason holding a NUL byte. MTurk was told "Rejected", then the local
save failed (500 on PostgreSQL) and the assignment stayed "submitted". Now the reason is refused before
any platform call; and when the platform refuses a decision, the local change is rolled back.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.services.batches import BatchSpec
from crowd.models import Payment, Worker
from crowd.services.launching import launch
from crowd.services.review import (
    ReviewError,
    approve_assignment,
    block_worker,
    bonus,
    notify_batch_workers,
    reject_assignment,
)
from tests.crowd.conftest import answers_for
from tests.factories import make_researcher, make_textbook
from tests.fakes.fake_mturk_server import FakeMTurkError
from tests.fakes.fixtures import aws_credentials, fake_mturk_server  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(fake_mturk_server: Any, settings: Any) -> tuple[Assignment, Any]:  # noqa: F811
    """One MTurk assignment accepted, done on crowdqa's page and submitted to the fake MTurk."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    make_textbook(
        "sci", [f"Mitochondria produce energy in cells, part {n}. Scientists study them." for n in range(6)]
    )
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="mturk", limit=1, reward_cents=50)
    )
    hit = batch.hits.get()
    fake = fake_mturk_server.fake
    assignment_id = fake.accept(hit.platform_ref, "WORKER1")
    client = Client()
    page = client.get(fake.worker_url(hit.platform_ref, assignment_id, "WORKER1"))["Location"]
    client.post(page + "consent/", {"consent": "yes"})
    assert client.post(page, answers_for(hit)).status_code == 200
    fake.assignments[assignment_id]["_state"] = "Submitted"
    fake.assignments[assignment_id]["AssignmentStatus"] = "Submitted"
    return Assignment.objects.get(platform_ref=assignment_id), fake


def test_reject__a_nul_in_the_reason_is_refused_before_mturk_is_told(
    submitted: tuple[Assignment, Any],
) -> None:
    assignment, fake = submitted
    calls = len(fake.calls)
    for reason in ("Not supported\x00 by the passage.", "bad \ud800 text", "x" * 2000):
        with pytest.raises(ReviewError):
            reject_assignment(assignment, reason)
    assert fake.calls[calls:] == []
    assert fake.assignments[assignment.platform_ref]["AssignmentStatus"] == "Submitted"
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED


def test_reject_and_approve__a_platform_refusal_rolls_the_local_change_back(
    submitted: tuple[Assignment, Any],
) -> None:
    assignment, fake = submitted
    fake.fail_next["RejectAssignment"] = FakeMTurkError("Service unavailable", "ServiceFault")
    with pytest.raises(ReviewError):
        reject_assignment(assignment, "The answer is not in the passage you chose.")
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.feedback == ""
    fake.fail_next["ApproveAssignment"] = FakeMTurkError("Service unavailable", "ServiceFault")
    with pytest.raises(ReviewError):
        approve_assignment(assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert not Payment.objects.filter(assignment=assignment).exists()
    approve_assignment(assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.APPROVED
    assert fake.assignments[assignment.platform_ref]["AssignmentStatus"] == "Approved"


def test_block_bonus_message__bad_text_never_reaches_mturk(submitted: tuple[Assignment, Any]) -> None:
    assignment, fake = submitted
    calls = len(fake.calls)
    worker = assignment.worker
    with pytest.raises(ReviewError):
        block_worker(worker, "spam\x00")
    with pytest.raises(ReviewError):
        bonus(assignment, 10, "great\x00 work")
    with pytest.raises(ReviewError):
        notify_batch_workers(assignment.hit.batch, "Hello\x00", "A message")
    assert fake.calls[calls:] == []
    fake.fail_next["CreateWorkerBlock"] = FakeMTurkError("Service unavailable", "ServiceFault")
    with pytest.raises(ReviewError):
        block_worker(worker, "Copied answers from another site.")
    assert not Worker.objects.get(pk=worker.pk).blocked
    block_worker(worker, "Copied answers from another site.")
    assert Worker.objects.get(pk=worker.pk).blocked and worker.platform_id in fake.blocks


def test_reject_view__the_nul_reason_case_end_to_end(submitted: tuple[Assignment, Any]) -> None:
    """Through the page: the NUL is cleaned at the door, MTurk and crowdqa agree on 'Rejected'."""
    assignment, fake = submitted
    client = Client()
    client.force_login(make_researcher("reviewer", is_superuser=True))
    response = client.post(
        f"/assignments/{assignment.pk}/review/",
        {"action": "reject", "reason": "Not supported\x00 by the passage you chose."},
    )
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.REJECTED
    assert fake.assignments[assignment.platform_ref]["AssignmentStatus"] == "Rejected"
    assert fake.assignments[assignment.platform_ref]["RequesterFeedback"] == assignment.feedback
