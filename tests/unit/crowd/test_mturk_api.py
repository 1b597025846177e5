"""Tests for crowd/providers/mturk/api.py: every call through botocore's Stubber with expected params."""

from __future__ import annotations

from datetime import datetime

import pytest

from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk import errors
from crowd.providers.mturk import requirements as mturk_requirements
from tests.fakes.fixtures import load_response


def test_make_client__sandbox_by_default() -> None:
    client = mturk_api.make_client()
    assert client.meta.endpoint_url == mturk_api.SANDBOX.endpoint_url
    assert client.meta.region_name == "us-east-1"


def test_make_client__live_when_asked() -> None:
    assert mturk_api.make_client(sandbox=False).meta.endpoint_url == mturk_api.LIVE.endpoint_url


def test_make_client__env_endpoint_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_MTURK", "http://127.0.0.1:9")
    assert mturk_api.make_client(sandbox=True).meta.endpoint_url == "http://127.0.0.1:9"


def test_cents_to_dollars__formats_and_round_trips() -> None:
    assert mturk_api.cents_to_dollars(5) == "0.05"
    assert mturk_api.cents_to_dollars(1250) == "12.50"
    assert mturk_api.dollars_to_cents("12.5") == 1250
    with pytest.raises(ValueError):
        mturk_api.cents_to_dollars(-1)


def test_external_question__escapes_url_and_sets_height() -> None:
    xml = mturk_api.external_question("https://x.org/hit?a=1&b=2", frame_height=800)
    assert "<ExternalURL>https://x.org/hit?a=1&amp;b=2</ExternalURL>" in xml
    assert "<FrameHeight>800</FrameHeight>" in xml
    with pytest.raises(ValueError, match="https"):
        mturk_api.external_question("ftp://x.org/")


def test_parse_answer_xml__keeps_repeated_fields() -> None:
    xml = load_response("mturk/list_assignments_page1")["Assignments"][0]["Answer"]
    assert mturk_api.parse_answer_xml(xml) == {
        "qa-0-question": ("When is the final exam?",),
        "qa-0-question_type": ("single factual",),
    }
    assert mturk_api.parse_answer_xml("") == {}


def test_create_hit_type__sends_reward_in_dollars_and_requirements(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    reqs = [
        mturk_requirements.locale_requirement(["US"]),
        mturk_requirements.lacks_qualification_requirement("QDONE"),
    ]
    stubber.add_response(
        "create_hit_type",
        load_response("mturk/create_hit_type"),
        {
            "Title": "T",
            "Description": "D",
            "Reward": "4.00",
            "AssignmentDurationInSeconds": 3600,
            "AutoApprovalDelayInSeconds": 86400,
            "Keywords": "qa,syllabus",
            "QualificationRequirements": reqs,
        },
    )
    hit_type = mturk_api.create_hit_type(client, "T", "D", 400, 3600, 86400, ("qa", "syllabus"), reqs)
    assert hit_type == "3X0ZJ4GA1K0TJW5ZFDFPSSLEXAMPLE"


def test_create_hit_with_hit_type__external_question_and_token(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    question = mturk_api.external_question("https://crowdqa.example.org/hit/1", 0)
    stubber.add_response(
        "create_hit_with_hit_type",
        load_response("mturk/create_hit_with_hit_type"),
        {
            "HITTypeId": "HT",
            "MaxAssignments": 3,
            "LifetimeInSeconds": 600,
            "Question": question,
            "RequesterAnnotation": "crowdqa:b:u",
            "UniqueRequestToken": "hit-b-u",
        },
    )
    hit = mturk_api.create_hit_with_hit_type(client, "HT", question, 3, 600, "crowdqa:b:u", "hit-b-u")
    assert hit["HITId"] == "3SBX2M1TKDPQYKMQ9VDM3EXAMPLE"


def test_list_assignments_for_hit__follows_next_token(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    base = {"HITId": "H1", "AssignmentStatuses": ["Submitted", "Approved"], "MaxResults": 100}
    stubber.add_response("list_assignments_for_hit", load_response("mturk/list_assignments_page1"), base)
    stubber.add_response(
        "list_assignments_for_hit", load_response("mturk/list_assignments_page2"), dict(base, NextToken="p2")
    )
    items = list(mturk_api.list_assignments_for_hit(client, "H1", ["Submitted", "Approved"]))
    assert [a["AssignmentId"] for a in items] == [
        "3ASSIGNMENT0000000000000001",
        "3ASSIGNMENT0000000000000002",
    ]


def test_list_worker_blocks__reads_every_page(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response(
        "list_worker_blocks", load_response("mturk/list_worker_blocks_page1"), {"MaxResults": 100}
    )
    stubber.add_response(
        "list_worker_blocks",
        load_response("mturk/list_worker_blocks_page2"),
        {"MaxResults": 100, "NextToken": "b2"},
    )
    assert [b["WorkerId"] for b in mturk_api.list_worker_blocks(client)] == [
        "A1BLOCKED00001",
        "A1BLOCKED00002",
    ]


def test_approve_and_reject_assignment__send_feedback(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response("approve_assignment", {}, {"AssignmentId": "A1", "RequesterFeedback": "thanks"})
    stubber.add_response("reject_assignment", {}, {"AssignmentId": "A2", "RequesterFeedback": "copied text"})
    mturk_api.approve_assignment(client, "A1", "thanks")
    mturk_api.reject_assignment(client, "A2", "copied text")


def test_approve_assignment__wrong_status_is_already_done(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted (1709290000000)",
        expected_params={"AssignmentId": "A1"},
    )
    with pytest.raises(errors.MTurkAlreadyDoneError) as info:
        mturk_api.approve_assignment(client, "A1")
    assert info.value.code == "RequestError" and isinstance(info.value, errors.AlreadyDoneError)


def test_send_bonus__token_and_dollars(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response(
        "send_bonus",
        {},
        {
            "WorkerId": "W1",
            "BonusAmount": "1.50",
            "AssignmentId": "A1",
            "Reason": "great",
            "UniqueRequestToken": "k1",
        },
    )
    assert mturk_api.send_bonus(client, "W1", "A1", 150, "great", "k1") is True


def test_send_bonus__duplicate_token_means_already_paid(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "send_bonus",
        service_error_code="RequestError",
        service_message='The idempotency token "k1" has already been processed. (1709290000000)',
        expected_params={
            "WorkerId": "W1",
            "BonusAmount": "1.50",
            "AssignmentId": "A1",
            "Reason": "great",
            "UniqueRequestToken": "k1",
        },
    )
    assert mturk_api.send_bonus(client, "W1", "A1", 150, "great", "k1") is False


def test_send_bonus__unknown_assignment_raises_not_found(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "send_bonus", service_error_code="RequestError", service_message="Assignment A9 does not exist. (1)"
    )
    with pytest.raises(errors.MTurkNotFoundError):
        mturk_api.send_bonus(client, "W1", "A9", 150, "great", "k1")


def test_call__throttling_and_service_fault_map_to_retryable_kinds(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "get_account_balance", service_error_code="ThrottlingException", http_status_code=400
    )
    stubber.add_client_error("get_account_balance", service_error_code="ServiceFault", http_status_code=500)
    with pytest.raises(errors.RateLimitedError):
        mturk_api.get_account_balance(client)
    with pytest.raises(errors.TransientError):
        mturk_api.get_account_balance(client)


def test_worker_blocks__create_and_delete(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response("create_worker_block", {}, {"WorkerId": "W1", "Reason": "spam"})
    stubber.add_response("delete_worker_block", {}, {"WorkerId": "W1", "Reason": "appeal accepted"})
    mturk_api.create_worker_block(client, "W1", "spam")
    mturk_api.delete_worker_block(client, "W1", "appeal accepted")


def test_qualifications__create_grant_revoke(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response(
        "create_qualification_type",
        load_response("mturk/create_qualification_type"),
        {"Name": "screened", "Description": "passed", "QualificationTypeStatus": "Active"},
    )
    stubber.add_response(
        "associate_qualification_with_worker",
        {},
        {"QualificationTypeId": "Q1", "WorkerId": "W1", "IntegerValue": 1, "SendNotification": False},
    )
    assert mturk_api.create_qualification_type(client, "screened", "passed") == "3QUALIFICATIONEXAMPLE0000001"
    mturk_api.associate_qualification_with_worker(client, "Q1", "W1")


def test_notify_workers__batches_of_100(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    workers = [f"W{i:03d}" for i in range(250)]
    for start in (0, 100, 200):
        stubber.add_response(
            "notify_workers",
            {"NotifyWorkersFailureStatuses": []},
            {"Subject": "New batch", "MessageText": "Hello", "WorkerIds": workers[start : start + 100]},
        )
    assert mturk_api.notify_workers(client, workers, "New batch", "Hello") == []


def test_hit_lifecycle_calls__expire_delete_extend(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response("update_expiration_for_hit", {}, {"HITId": "H1", "ExpireAt": mturk_api.EXPIRE_NOW})
    stubber.add_response("delete_hit", {}, {"HITId": "H1"})
    stubber.add_response(
        "create_additional_assignments_for_hit",
        {},
        {"HITId": "H2", "NumberOfAdditionalAssignments": 2, "UniqueRequestToken": "more-1"},
    )
    mturk_api.update_expiration_for_hit(client, "H1")
    mturk_api.delete_hit(client, "H1")
    mturk_api.create_additional_assignments_for_hit(client, "H2", 2, "more-1")
    assert mturk_api.EXPIRE_NOW < datetime.now(mturk_api.EXPIRE_NOW.tzinfo)


def test_get_account_balance__in_cents(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response(
        "get_account_balance", load_response("mturk/get_account_balance", AvailableBalance="12.34"), {}
    )
    assert mturk_api.get_account_balance(client) == 1234


def test_list_bonus_payments__by_assignment(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_response(
        "list_bonus_payments",
        {"NumResults": 1, "BonusPayments": [{"WorkerId": "W1", "BonusAmount": "1.00", "AssignmentId": "A1"}]},
        {"AssignmentId": "A1", "MaxResults": 100},
    )
    assert len(list(mturk_api.list_bonus_payments(client, "A1"))) == 1


def test_send_bonus__other_token_errors_are_not_taken_as_paid(mturk_stubber) -> None:
    client, stubber = mturk_stubber
    stubber.add_client_error(
        "send_bonus", service_error_code="RequestError", service_message="UniqueRequestToken is not valid."
    )
    with pytest.raises(errors.MTurkInvalidRequestError):
        mturk_api.send_bonus(client, "W1", "A1", 150, "great", "k1")
