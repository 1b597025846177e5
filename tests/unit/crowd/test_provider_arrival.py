"""Reading MTurk and Prolific arrivals from HIT URLs (crowd/providers/traits.py and arrival.py)."""

from __future__ import annotations

import pytest

from crowd.providers.arrival import ArrivalError
from crowd.providers.mturk.traits import PREVIEW_ASSIGNMENT_ID, external_submit_url
from crowd.providers.traits import parse_arrival


def test_parse_arrival__mturk_accepted() -> None:
    arrival = parse_arrival(
        {
            "assignmentId": "A1",
            "hitId": "H1",
            "workerId": "W1",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        }
    )
    assert arrival is not None and arrival.platform == "mturk"
    assert (arrival.worker_id, arrival.assignment_ref, arrival.hit_ref) == ("W1", "A1", "H1")
    assert arrival.submit_to == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert arrival.meta == {"turk_submit_to": arrival.submit_to}
    assert not arrival.preview


def test_parse_arrival__mturk_preview_needs_no_worker() -> None:
    arrival = parse_arrival({"assignmentId": PREVIEW_ASSIGNMENT_ID, "hitId": "H1"})
    assert arrival is not None and arrival.preview and arrival.worker_id == ""


def test_parse_arrival__prolific() -> None:
    arrival = parse_arrival({"PROLIFIC_PID": "P1", "STUDY_ID": "S1", "SESSION_ID": "X1"})
    assert arrival is not None and arrival.platform == "prolific"
    assert (arrival.worker_id, arrival.assignment_ref, arrival.hit_ref) == ("P1", "X1", "S1")
    assert arrival.meta == {"study_id": "S1"}


def test_parse_arrival__neither_platform() -> None:
    assert parse_arrival({"page": "2"}) is None


@pytest.mark.parametrize(
    "params, missing",
    [
        ({"assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://www.mturk.com"}, "workerId"),
        ({"assignmentId": "A1", "workerId": "W", "turkSubmitTo": "https://www.mturk.com"}, "hitId"),
        ({"PROLIFIC_PID": "P1", "STUDY_ID": "S1"}, "SESSION_ID"),
        ({"PROLIFIC_PID": "", "STUDY_ID": "S1", "SESSION_ID": "X"}, "PROLIFIC_PID"),
    ],
)
def test_parse_arrival__incomplete_names_the_parameter(params: dict[str, str], missing: str) -> None:
    with pytest.raises(ArrivalError, match=missing):
        parse_arrival(params)


def test_external_submit_url__refuses_other_schemes() -> None:
    with pytest.raises(ArrivalError, match="http"):
        external_submit_url("javascript:alert(1)")
    assert external_submit_url("https://www.mturk.com/") == "https://www.mturk.com/mturk/externalSubmit"
    assert (
        external_submit_url("http://127.0.0.1:5/mturk/externalSubmit", test_origins=["http://127.0.0.1:5"])
        == "http://127.0.0.1:5/mturk/externalSubmit"
    )


@pytest.mark.parametrize(
    "value",
    [
        "https://evil.example.net",
        "https://www.mturk.com.evil.example",
        "https://user:pw@www.mturk.com",
        "https://www.mturk.com@evil.example",
        "http://www.mturk.com",
        "https://www.mturk.com/elsewhere",
        "https://www.mturk.com/mturk/externalSubmit?x=1",
        "https://www.mturk.com:444",
        "http://127.0.0.1:6",
    ],
)
def test_external_submit_url__only_mturk_worker_hosts(value: str) -> None:
    with pytest.raises(ArrivalError, match="turkSubmitTo"):
        external_submit_url(value, test_origins=["http://127.0.0.1:5"])


def test_external_submit_url__sandbox_and_production() -> None:
    assert external_submit_url("https://workersandbox.mturk.com") == (
        "https://workersandbox.mturk.com/mturk/externalSubmit"
    )
    assert external_submit_url("https://WWW.MTURK.COM/mturk/externalSubmit/") == (
        "https://www.mturk.com/mturk/externalSubmit"
    )


def test_parse_arrival__overlong_or_odd_ids_are_refused() -> None:
    with pytest.raises(ArrivalError, match="too long"):
        parse_arrival({"PROLIFIC_PID": "p" * 101, "STUDY_ID": "S1", "SESSION_ID": "X1"})
    with pytest.raises(ArrivalError, match="PROLIFIC_PID"):
        parse_arrival({"PROLIFIC_PID": "p\x00q", "STUDY_ID": "S1", "SESSION_ID": "X1"})
