"""The fake platforms fail as the real ones do, at the chosen rate, the same way for the same seed.

Each kind of fault is seen through the real clients (boto3 for MTurk, ``ProlificClient`` for Prolific)
with their retries turned off, so the error crowdqa's code meets is the one the fault makes.
"""

from __future__ import annotations

import pytest

from crowd.providers import retries
from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk.errors import MTurkRateLimitedError, MTurkTransientError
from crowd.providers.prolific import api as prolific_api
from crowd.providers.prolific.api import ProlificClient
from crowd.providers.prolific.errors import ProlificRateLimitedError, ProlificTransientError
from tests.fakes.fake_mturk_server import FakeMTurkServer
from tests.fakes.fake_prolific_server import FakeProlificServer
from tests.fakes.faults import Faults


def test_draw__same_seed_same_faults_and_rates_are_kept() -> None:
    def run(seed: int) -> list[object]:
        faults = Faults(seed=seed).set("*", throttle=0.10, server_error=0.02, lost_reply=0.01)
        return [faults.draw("CreateHITWithHITType") for _ in range(5000)]

    first = run(3)
    assert first == run(3) and first != run(4)
    assert 400 < first.count("throttle") < 600
    assert 60 < first.count("server_error") < 140
    assert 25 < first.count("lost_reply") < 80


def test_script__faults_the_calls_after_the_first_n_then_stops() -> None:
    faults = Faults().script("CreateHITWithHITType", ["throttle"] * 4, after=100)
    drawn = [faults.draw("CreateHITWithHITType") for _ in range(110)]
    assert drawn[:100] == [None] * 100 and drawn[100:104] == ["throttle"] * 4 and drawn[104:] == [None] * 6
    assert faults.summary() == {"throttle": 4}


def test_set__refuses_unknown_kinds_and_rates_over_one() -> None:
    with pytest.raises(ValueError):
        Faults().set("*", flood=0.1)
    with pytest.raises(ValueError):
        Faults().set("*", throttle=0.7, server_error=0.5)


def _hit_type(client: object) -> str:
    return mturk_api.create_hit_type(client, "T", "D", 10, 600, 3600)


@pytest.mark.parametrize(
    ("kind", "error", "applied"),
    [
        ("throttle", MTurkRateLimitedError, False),
        ("server_error", MTurkTransientError, False),
        ("timeout", MTurkTransientError, False),
        ("reset", MTurkTransientError, False),
        ("lost_reply", MTurkTransientError, True),
    ],
)
def test_mturk_faults__seen_through_boto3_with_the_services_error_shapes(
    aws_credentials: None, kind: str, error: type[Exception], applied: bool
) -> None:
    faults = Faults(stall_seconds=0.3)
    with FakeMTurkServer(faults=faults) as server:
        client = mturk_api.make_client(endpoint_url=server.url, max_attempts=1, read_timeout=5.0)
        hit_type = _hit_type(client)
        faults.script("CreateHITWithHITType", [kind])
        with pytest.raises(error):
            mturk_api.create_hit_with_hit_type(
                client, hit_type, mturk_api.external_question("https://x.test/"), 1, 3600, "a", "tok-1"
            )
        assert len(server.fake.hits) == (1 if applied else 0)
        assert faults.injected[("CreateHITWithHITType", kind)] == 1


def test_mturk_throttle__botocore_retries_it_as_throttling(aws_credentials: None) -> None:
    faults = Faults()
    with FakeMTurkServer(faults=faults) as server:
        client = mturk_api.make_client(endpoint_url=server.url, max_attempts=5)
        faults.script("GetAccountBalance", ["throttle", "server_error", "reset"])
        before = retries.mark()
        assert mturk_api.get_account_balance(client) == 10_000
        assert server.fake.calls.count("GetAccountBalance") == 4 and faults.total() == 3
        assert retries.since(before) == {"mturk get_account_balance": 3}


@pytest.mark.parametrize(
    ("kind", "error", "applied"),
    [
        ("throttle", ProlificRateLimitedError, False),
        ("server_error", ProlificTransientError, False),
        ("timeout", ProlificTransientError, False),
        ("reset", ProlificTransientError, False),
        ("lost_reply", ProlificTransientError, True),
    ],
)
def test_prolific_faults__seen_through_the_client(kind: str, error: type[Exception], applied: bool) -> None:
    faults = Faults(stall_seconds=0.3, retry_after="7")
    with FakeProlificServer(faults=faults) as server:
        client = ProlificClient(token=server.token, base_url=server.api_url, timeout=(2.0, 5.0), retries=0)
        faults.script("create_group", [kind])
        with pytest.raises(error) as caught:
            prolific_api.ParticipantGroups.create(client, "g")
        assert len(server.fake.groups) == (1 if applied else 0)
        if kind == "throttle":
            assert caught.value.status == 429 and caught.value.retry_after == 7.0
