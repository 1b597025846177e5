"""Tests for crowd/providers/prolific/api.py against the fake Prolific server."""

from __future__ import annotations

import pytest
import requests

from crowd.providers.prolific import api as prolific_api
from crowd.providers.prolific import errors
from crowd.providers.prolific.api import ProlificClient
from tests.fakes.fixtures import load_response

LONG_REASON = "The answers do not come from the syllabus you were shown; " * 2


def test_study_url__adds_prolific_placeholders() -> None:
    url = prolific_api.study_url("https://crowdqa.example.org/hit/prolific/7")
    assert url == (
        "https://crowdqa.example.org/hit/prolific/7?PROLIFIC_PID={{%PROLIFIC_PID%}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert prolific_api.study_url("https://x.org/h?a=1").startswith("https://x.org/h?a=1&PROLIFIC_PID=")


def test_completion_url__carries_the_code() -> None:
    assert (
        prolific_api.completion_url("C1A2B3C4") == "https://app.prolific.com/submissions/complete?cc=C1A2B3C4"
    )


def test_validate_rejection__short_message_and_unknown_category() -> None:
    with pytest.raises(errors.ProlificInvalidRequestError, match="at least 100 characters"):
        prolific_api.validate_rejection("too short", "LOW_EFFORT", "S1")
    with pytest.raises(errors.ProlificInvalidRequestError, match="rejection_category"):
        prolific_api.validate_rejection(LONG_REASON, "BAD_VIBES")
    prolific_api.validate_rejection(LONG_REASON, "LOW_EFFORT")


def test_cents_to_amount__decimal_in_study_currency() -> None:
    assert prolific_api.cents_to_amount(150) == "1.50"
    assert prolific_api.cents_to_amount(5) == "0.05"
    with pytest.raises(ValueError):
        prolific_api.cents_to_amount(0)


def test_client__token_is_required_when_built() -> None:
    with pytest.raises(errors.ProviderConfigError, match="PROLIFIC_API_TOKEN"):
        ProlificClient.from_config({"PROLIFIC_API_URL": "http://127.0.0.1:9/api/v1/"})


def test_request__bad_token_is_auth_error(fake_prolific_server) -> None:
    client = ProlificClient(token="wrong", base_url=fake_prolific_server.api_url)
    with pytest.raises(errors.ProlificAuthError) as info:
        prolific_api.Studies.retrieve(client, "x")
    assert info.value.status == 401 and info.value.code == "100"


def test_request__missing_study_is_not_found(prolific_client) -> None:
    with pytest.raises(errors.ProlificNotFoundError, match="Study nope not found"):
        prolific_api.Studies.retrieve(prolific_client, "nope")


def test_request__unreachable_server_is_transient() -> None:
    waits: list[float] = []  # the backoff's waits, recorded instead of slept (up to a minute in all)
    client = ProlificClient(
        token="t", base_url="http://127.0.0.1:9/api/v1/", timeout=(0.5, 0.5), sleep=waits.append
    )
    with pytest.raises(errors.ProlificTransientError) as info:
        prolific_api.Studies.retrieve(client, "x")
    assert info.value.never_sent  # refused: the request never reached a server
    assert len(waits) == client.retries == 8  # every retry of a refused GET was tried, with a backoff
    assert all(0 <= w <= client.max_wait for w in waits)


def test_request__sends_token_header_and_timeout() -> None:
    seen = {}

    class Session(requests.Session):
        def request(self, method, url, **kwargs):  # type: ignore[override]
            seen.update(kwargs, method=method, url=url)
            response = requests.Response()
            response.status_code = 200
            response._content = b'{"id": "s1"}'
            return response

    client = ProlificClient(token="tok", base_url="https://api.example/api/v1", session=Session())
    assert prolific_api.Studies.retrieve(client, "s1") == {"id": "s1"}
    assert seen["url"] == "https://api.example/api/v1/studies/s1/"
    assert seen["headers"]["Authorization"] == "Token tok" and seen["timeout"] == (10.0, 30.0)


def test_list_submissions__follows_next_links(prolific_client, fake_prolific_server) -> None:
    fake = fake_prolific_server.fake
    body = {k: v for k, v in load_response("prolific/study").items() if k not in ("id", "status")}
    study = prolific_api.Studies.create(prolific_client, body)
    prolific_api.Studies.update(prolific_client, study["id"], {"total_available_places": 5})
    prolific_api.Studies.transition(prolific_client, study["id"], "PUBLISH")
    started = {fake.start(study["id"], f"P{i}") for i in range(5)}
    listed = {s["id"] for s in prolific_api.Studies.list_submissions(prolific_client, study["id"])}
    assert listed == started
    assert fake.calls.count(f"GET studies/{study['id']}/submissions/") == 3  # 2 + 2 + 1 per page


def test_participant_groups__add_list_remove(prolific_client) -> None:
    group = prolific_api.ParticipantGroups.create(prolific_client, "screened", "ws1")
    prolific_api.ParticipantGroups.add_participants(prolific_client, group["id"], ["P1", "P2", "P3"])
    prolific_api.ParticipantGroups.remove_participants(prolific_client, group["id"], ["P2"])
    members = [
        p["participant_id"]
        for p in prolific_api.ParticipantGroups.list_participants(prolific_client, group["id"])
    ]
    assert members == ["P1", "P3"]


def test_filters__allow_and_block_lists() -> None:
    assert prolific_api.allowlist_filter(["G1"]) == {
        "filter_id": "participant_group_allowlist",
        "selected_values": ["G1"],
    }
    assert prolific_api.blocklist_filter(["G2"])["filter_id"] == "participant_group_blocklist"
