"""Tests for crowd/providers/prolific/provider.py: the batch story against the fake Prolific server."""

from __future__ import annotations

import pytest

from crowd.providers.base import (
    InMemoryDedupStore,
    InMemoryPaymentStore,
    PaymentState,
    PaymentStatus,
    PublishRequest,
    PublishUnit,
    SubmissionStatus,
)
from crowd.providers.prolific import errors
from crowd.providers.prolific.provider import ProlificProvider, resolve_unconfirmed
from crowd.providers.prolific.webhooks import WebhookError, receive

SECRET = "whsec-test"
REASON = (
    "Your questions were not about the syllabus you were given, and none of the answers can be found in it."
)


def make_provider(server, prolific_client) -> ProlificProvider:
    group = server.fake.create_group({"name": "crowdqa blocked"})[1]["id"]
    return ProlificProvider(prolific_client, workspace_id="ws1", block_group_id=group)


def make_request(**overrides) -> PublishRequest:
    values = dict(
        batch_ref="b7",
        title="Write questions about a syllabus",
        description="Read a syllabus, write 14 QA pairs.",
        external_url="https://crowdqa.example.org/hit/prolific/7",
        reward_cents=900,
        assignments=2,
        duration_seconds=3000,
        units=(PublishUnit("u1"), PublishUnit("u2")),
    )
    values.update(overrides)
    return PublishRequest(**values)


def test_publish__study_body_and_status(fake_prolific_server, prolific_client) -> None:
    provider = make_provider(fake_prolific_server, prolific_client)
    batch = provider.publish(make_request(completion_code="C0DE1234", min_approval_rate=95))
    study = fake_prolific_server.fake.studies[batch.platform_batch_id]
    assert study["status"] == "ACTIVE"
    assert study["total_available_places"] == 4 and study["estimated_completion_time"] == 50
    assert study["reward"] == 900 and study["prolific_id_option"] == "url_parameters"
    assert study["completion_codes"][0]["code"] == "C0DE1234" and batch.completion_code == "C0DE1234"
    assert {f["filter_id"] for f in study["filters"]} == {"participant_group_blocklist", "approval_rate"}
    assert study["external_study_url"].endswith("SESSION_ID={{%SESSION_ID%}}")


def test_prolific_end_to_end__publish_submit_list_approve_reject_bonus_webhook(
    fake_prolific_server, prolific_client
) -> None:
    fake = fake_prolific_server.fake
    provider = make_provider(fake_prolific_server, prolific_client)
    batch = provider.publish(make_request())
    study_id = batch.platform_batch_id
    subs = {}
    for pid in ("P1", "P2", "P3"):
        subs[pid] = fake.start(study_id, pid)
        url = fake.study_url_for(study_id, pid, subs[pid])
        assert f"PROLIFIC_PID={pid}" in url and f"SESSION_ID={subs[pid]}" in url
        fake.complete(subs[pid], batch.completion_code)

    listed = provider.list_submissions(batch, [SubmissionStatus.SUBMITTED])  # 3 items over 2 pages
    assert {s.worker_id for s in listed} == {"P1", "P2", "P3"}

    assert provider.approve(batch, subs["P1"]).changed is True
    assert provider.approve(batch, subs["P1"]).changed is False
    assert (
        provider.reject(batch, subs["P2"], REASON, "FAILED_INSTRUCTIONS").status == SubmissionStatus.REJECTED
    )
    with pytest.raises(errors.ProlificAlreadyDoneError, match="is REJECTED"):
        provider.approve(batch, subs["P2"])
    provider.bulk_approve(batch, [subs["P3"]])

    store = InMemoryPaymentStore()
    paid = provider.bonus(batch, subs["P1"], "P1", 150, "great", "bonus-s1", store)
    again = provider.bonus(batch, subs["P1"], "P1", 150, "great", "bonus-s1", store)
    assert (paid.status, again.status) == (PaymentStatus.PAID, PaymentStatus.ALREADY_PAID)
    assert fake.payments == [{"bulk_id": paid.platform_ref, "participant_id": "P1", "cents": 150}]

    # The webhook for P1's approval: accepted once, duplicate dropped, forged one refused.
    dedup = InMemoryDedupStore()
    payload = {
        "resource_id": subs["P1"],
        "event_type": "submission.status.change",
        "participant_id": "P1",
        "status": "APPROVED",
    }
    headers, body = fake.webhook(SECRET, payload)
    event = receive(SECRET, headers, body, dedup)
    assert event is not None and event.resource_id == subs["P1"] and event.status == "APPROVED"
    assert receive(SECRET, headers, body, dedup) is None
    with pytest.raises(WebhookError):
        receive(SECRET, headers, body.replace(b"APPROVED", b"REJECTED"), dedup)

    statuses = {s.worker_id: s.status for s in provider.list_submissions(batch)}
    assert statuses == {
        "P1": SubmissionStatus.APPROVED,
        "P2": SubmissionStatus.REJECTED,
        "P3": SubmissionStatus.APPROVED,
    }
    provider.stop(batch)
    provider.stop(batch)  # already stopped: left alone
    assert fake.studies[study_id]["status"] == "AWAITING REVIEW"


def test_bonus__lost_pay_response_is_never_paid_twice(fake_prolific_server, prolific_client) -> None:
    fake = fake_prolific_server.fake
    provider = make_provider(fake_prolific_server, prolific_client)
    batch = provider.publish(make_request())
    sub = fake.start(batch.platform_batch_id, "P1")
    fake.complete(sub, batch.completion_code)
    store = InMemoryPaymentStore()

    fake.drop_after_processing.add("pay")
    with pytest.raises(errors.ProlificTransientError):
        provider.bonus(batch, sub, "P1", 200, "great", "bonus-s1", store)
    assert store.get("bonus-s1").state == PaymentState.PAY_REQUESTED
    retry = provider.bonus(batch, sub, "P1", 200, "great", "bonus-s1", store)
    assert retry.status == PaymentStatus.UNCONFIRMED
    assert (
        len(fake.payments) == 1
        and fake.calls.count(f"POST bulk-bonus-payments/{retry.platform_ref}/pay/") == 1
    )

    resolve_unconfirmed(store, "bonus-s1", paid=True)  # a person saw it paid on Prolific
    assert (
        provider.bonus(batch, sub, "P1", 200, "great", "bonus-s1", store).status == PaymentStatus.ALREADY_PAID
    )
    assert len(fake.payments) == 1


def test_bonus__refused_pay_can_be_retried(fake_prolific_server, prolific_client) -> None:
    fake = fake_prolific_server.fake
    provider = make_provider(fake_prolific_server, prolific_client)
    batch = provider.publish(make_request())
    sub = fake.start(batch.platform_batch_id, "P1")
    fake.complete(sub, batch.completion_code)
    store = InMemoryPaymentStore()
    real_pay = fake.pay_bonus

    def refuse(body, id, **kw):
        from tests.fakes.fake_prolific_server import FakeProlificError

        raise FakeProlificError(400, "balance check failed")

    fake.pay_bonus = refuse  # type: ignore[method-assign]
    with pytest.raises(errors.ProlificInvalidRequestError):
        provider.bonus(batch, sub, "P1", 200, "great", "bonus-s1", store)
    assert store.get("bonus-s1").state == PaymentState.REFUSED
    assert "balance check failed" in store.get("bonus-s1").error
    fake.pay_bonus = real_pay  # type: ignore[method-assign]
    assert provider.bonus(batch, sub, "P1", 200, "great", "bonus-s1", store).status == PaymentStatus.PAID
    assert len(fake.bulk_bonuses) == 1 and len(fake.payments) == 1


def test_reject__short_reason_never_reaches_prolific(fake_prolific_server, prolific_client) -> None:
    provider = make_provider(fake_prolific_server, prolific_client)
    batch = provider.publish(make_request())
    before = len(fake_prolific_server.fake.calls)
    with pytest.raises(errors.ProlificInvalidRequestError, match="100 characters"):
        provider.reject(batch, "S1", "bad", "LOW_EFFORT")
    assert len(fake_prolific_server.fake.calls) == before


def test_workers__block_list_allow_list_and_messages(fake_prolific_server, prolific_client) -> None:
    fake = fake_prolific_server.fake
    provider = make_provider(fake_prolific_server, prolific_client)
    screened = provider.create_qualification("crowdqa screened", "passed the screening HIT")
    provider.qualify_worker("P1", screened)
    provider.qualify_worker("P2", screened)
    provider.block_worker("P2", "copied answers")
    batch = provider.publish(make_request(require_qualifications=(screened,)))
    fake.start(batch.platform_batch_id, "P1")
    with pytest.raises(Exception, match="not eligible"):
        fake.start(batch.platform_batch_id, "P2")  # blocked
    with pytest.raises(Exception, match="not eligible"):
        fake.start(batch.platform_batch_id, "P3")  # not screened
    provider.unblock_worker("P2", "appeal")
    fake.start(batch.platform_batch_id, "P2")
    provider.add_assignments(batch, batch.platform_batch_id, 3, "more-1")
    assert fake.studies[batch.platform_batch_id]["total_available_places"] == 7
    provider.notify_workers(["P1", "P2"], "Thanks", "A new batch is open.", batch)
    assert [m["recipient_id"] for m in fake.messages] == ["P1", "P2"]
    with pytest.raises(errors.ProlificInvalidRequestError):
        provider.notify_workers(["P1"], "x", "y")


def test_block_worker__needs_a_block_group(prolific_client) -> None:
    with pytest.raises(errors.ProviderConfigError, match="PROLIFIC_BLOCK_GROUP_ID"):
        ProlificProvider(prolific_client).block_worker("P1", "spam")
