"""Tests for crowd/providers/mturk/provider.py: Stubber for the mapping, the fake MTurk server end to end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from botocore.stub import ANY

from crowd.providers.base import (
    InMemoryPaymentStore,
    PaymentRecord,
    PaymentState,
    PaymentStatus,
    PublishedBatch,
    PublishedUnit,
    PublishRequest,
    PublishUnit,
    SubmissionStatus,
)
from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk import errors
from crowd.providers.mturk import requirements as mturk_requirements
from crowd.providers.mturk.provider import MTurkProvider, annotation_for, token_for
from tests.fakes.fixtures import load_response

BATCH = PublishedBatch("mturk", "b7", "HT", (PublishedUnit("u1", "H1"),))


def make_request(**overrides) -> PublishRequest:
    values = dict(
        batch_ref="b7",
        title="Write questions about a syllabus",
        description="Read a syllabus, write 14 QA pairs.",
        external_url="https://crowdqa.example.org/hit/mturk/7",
        reward_cents=400,
        assignments=3,
        duration_seconds=3600,
        units=(PublishUnit("u1", "https://crowdqa.example.org/hit/1"), PublishUnit("u2")),
    )
    values.update(overrides)
    return PublishRequest(**values)


def test_token_for__stable_and_at_most_64_chars() -> None:
    assert token_for("bonus", "a1") == "bonus-a1"
    long = token_for("x" * 100)
    assert len(long) == 64 and long == token_for("x" * 100) and long != token_for("x" * 99 + "y")


def test_publish__hit_type_requirements_then_one_hit_per_unit(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    request = make_request(
        locales=("US",), min_approval_rate=98, require_qualifications=("QS",), exclude_qualifications=("QD",)
    )
    stubber.add_response(
        "create_hit_type",
        load_response("mturk/create_hit_type", HITTypeId="HT"),
        {
            "Title": request.title,
            "Description": request.description,
            "Reward": "4.00",
            "AssignmentDurationInSeconds": 3600,
            "AutoApprovalDelayInSeconds": request.auto_approve_seconds,
            "QualificationRequirements": [
                mturk_requirements.locale_requirement(["US"]),
                mturk_requirements.approval_rate_requirement(98),
                mturk_requirements.has_qualification_requirement("QS"),
                mturk_requirements.lacks_qualification_requirement("QD"),
            ],
        },
    )
    for ref, url, hit_id in (
        ("u1", "https://crowdqa.example.org/hit/1", "H1"),
        ("u2", request.external_url, "H2"),
    ):
        hit = load_response("mturk/create_hit_with_hit_type")["HIT"]
        hit["HITId"] = hit_id
        stubber.add_response(
            "create_hit_with_hit_type",
            {"HIT": hit},
            {
                "HITTypeId": "HT",
                "MaxAssignments": 3,
                "LifetimeInSeconds": request.lifetime_seconds,
                "Question": mturk_api.external_question(url),
                "RequesterAnnotation": annotation_for("b7", ref),
                "UniqueRequestToken": token_for("hit", "b7", ref),
            },
        )
    batch = MTurkProvider(client).publish(request)
    assert batch.units == (PublishedUnit("u1", "H1"), PublishedUnit("u2", "H2"))
    assert batch.sandbox and batch.preview_url.startswith("https://workersandbox.mturk.com/")


def test_approve__already_approved_is_unchanged(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted (1)",
    )
    stubber.add_response(
        "get_assignment", load_response("mturk/get_assignment_approved"), {"AssignmentId": "A2"}
    )
    result = MTurkProvider(client).approve(BATCH, "A2")
    assert result.status == SubmissionStatus.APPROVED and result.changed is False


def test_reject__already_approved_raises_with_current_state(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "reject_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted (1)",
    )
    stubber.add_response(
        "get_assignment", load_response("mturk/get_assignment_approved"), {"AssignmentId": "A2"}
    )
    with pytest.raises(errors.MTurkAlreadyDoneError, match=r"Assignment\(A2\) is Approved"):
        MTurkProvider(client).reject(BATCH, "A2", "copied the syllabus text")


def test_bonus__paid_record_sends_nothing(mturk_stubber) -> None:
    client, _ = mturk_stubber
    store = InMemoryPaymentStore()
    store.put(PaymentRecord("k1", PaymentState.PAID, "W1", 100, "k1"))
    result = MTurkProvider(client).bonus(BATCH, "A1", "W1", 100, "great", "k1", store)
    assert result.status == PaymentStatus.ALREADY_PAID


def test_bonus__old_unconfirmed_request_is_not_resent(mturk_stubber) -> None:
    client, _ = mturk_stubber
    store = InMemoryPaymentStore()
    old = datetime.now(UTC) - timedelta(days=2)
    store.put(PaymentRecord("k1", PaymentState.PAY_REQUESTED, "W1", 100, "k1", updated_at=old))
    result = MTurkProvider(client).bonus(BATCH, "A1", "W1", 100, "great", "k1", store)
    assert result.status == PaymentStatus.UNCONFIRMED


def test_bonus__recent_request_is_resent_with_same_token(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    store = InMemoryPaymentStore()
    store.put(PaymentRecord("k1", PaymentState.PAY_REQUESTED, "W1", 100, "k1"))
    stubber.add_client_error(
        "send_bonus",
        service_error_code="RequestError",
        service_message='The idempotency token "k1" has already been processed. (1)',
        expected_params={
            "WorkerId": "W1",
            "BonusAmount": "1.00",
            "AssignmentId": "A1",
            "Reason": ANY,
            "UniqueRequestToken": "k1",
        },
    )
    result = MTurkProvider(client).bonus(BATCH, "A1", "W1", 100, "great", "k1", store)
    assert result.status == PaymentStatus.ALREADY_PAID and store.get("k1").state == PaymentState.PAID


def test_mturk_end_to_end__publish_submit_list_approve_reject_bonus(fake_mturk_server) -> None:
    provider = MTurkProvider.from_config({"MTURK_SANDBOX": True})
    fake = fake_mturk_server.fake
    batch = provider.publish(make_request(assignments=2, units=(PublishUnit("u1"),)))
    hit_id = batch.units[0].platform_id
    # Three workers: two fill the HIT through externalSubmit, a third finds it full.
    a1 = fake.submit(hit_id, "W1", {"question": "When is the exam?", "flag": ["unrelated", "too_specific"]})
    url = fake.worker_url(hit_id, a1, "W1")
    assert (
        url.startswith("https://crowdqa.example.org/hit/mturk/7?assignmentId=") and "turkSubmitTo=http" in url
    )
    a2 = fake.submit(hit_id, "W2", {"question": "Who teaches it?"})
    with pytest.raises(Exception, match="not available"):
        fake.accept(hit_id, "W3")
    # Small pages force pagination through NextToken.
    fake_pages = [s for s in provider.list_submissions(batch)]
    assert {s.platform_assignment_id for s in fake_pages} == {a1, a2}
    by_id = {s.platform_assignment_id: s for s in fake_pages}
    assert by_id[a1].answers["flag"] == ("unrelated", "too_specific")
    assert by_id[a1].status == SubmissionStatus.SUBMITTED and by_id[a1].submitted_at.tzinfo is UTC

    assert provider.approve(batch, a1).changed is True
    assert (
        provider.reject(batch, a2, "The questions do not use the syllabus.").status
        == SubmissionStatus.REJECTED
    )
    assert provider.approve(batch, a1).changed is False

    store = InMemoryPaymentStore()
    first = provider.bonus(batch, a1, "W1", 150, "Excellent questions", "bonus-a1", store)
    store.put(
        PaymentRecord("bonus-a1", PaymentState.PAY_REQUESTED, "W1", 150, "bonus-a1")
    )  # as if the answer was lost
    retry = provider.bonus(batch, a1, "W1", 150, "Excellent questions", "bonus-a1", store)
    assert (first.status, retry.status) == (PaymentStatus.PAID, PaymentStatus.ALREADY_PAID)
    assert len(fake.bonuses) == 1 and fake.calls.count("SendBonus") == 2

    statuses = {s.platform_assignment_id: s.status for s in provider.list_submissions(batch)}
    assert statuses == {a1: SubmissionStatus.APPROVED, a2: SubmissionStatus.REJECTED}
    provider.stop(batch)
    assert fake.hits[hit_id]["HITStatus"] == "Unassignable"


def test_mturk_end_to_end__pagination_over_many_assignments(fake_mturk_server) -> None:
    provider = MTurkProvider(mturk_api.make_client())
    batch = provider.publish(make_request(assignments=12, units=(PublishUnit("u1"),)))
    hit_id = batch.units[0].platform_id
    submitted = {fake_mturk_server.fake.submit(hit_id, f"W{i}") for i in range(12)}
    pages_before = fake_mturk_server.fake.calls.count("ListAssignmentsForHIT")
    for assignment in mturk_api.list_assignments_for_hit(provider.client, hit_id, page_size=5):
        submitted.discard(assignment["AssignmentId"])
    assert submitted == set()
    assert fake_mturk_server.fake.calls.count("ListAssignmentsForHIT") - pages_before == 3


def test_mturk_end_to_end__workers_quals_blocks_and_retried_publish(fake_mturk_server) -> None:
    provider = MTurkProvider(mturk_api.make_client())
    fake = fake_mturk_server.fake
    done_qual = provider.create_qualification("crowdqa did batch 7", "Kept out of later batches")
    provider.qualify_worker("W1", done_qual)
    request = make_request(units=(PublishUnit("u1"),), exclude_qualifications=(done_qual,))
    batch = provider.publish(request)
    hit_id = batch.units[0].platform_id
    with pytest.raises(Exception, match="qualification"):
        fake.accept(hit_id, "W1")
    provider.block_worker("W2", "spam")
    assert provider.is_blocked("W2")
    with pytest.raises(Exception, match="blocked"):
        fake.accept(hit_id, "W2")
    provider.unblock_worker("W2", "appeal")
    fake.accept(hit_id, "W2")
    # A retried publish (crash after MTurk created the HIT) finds the same HIT by its annotation.
    again = provider.publish(request)
    assert again.units == batch.units
    provider.add_assignments(batch, hit_id, 2, "more-1")
    provider.add_assignments(batch, hit_id, 2, "more-1")
    assert fake.hits[hit_id]["MaxAssignments"] == 5
    provider.notify_workers([f"W{i}" for i in range(150)], "New batch", "Hello")
    assert [len(n["WorkerIds"]) for n in fake.notifications] == [100, 50]
    assert provider.balance_cents() == 10_000
