"""Reading MTurk and Prolific arrivals from HIT URLs (crowd/arrival.py)."""

from __future__ import annotations

import pytest

from crowd.arrival import PREVIEW_ASSIGNMENT_ID, ArrivalError, Platform, external_submit_url, parse_arrival


def test_parse_arrival__mturk_accepted() -> None:
    arrival = parse_arrival(
        {
            "assignmentId": "A1",
            "hitId": "H1",
            "workerId": "W1",
            "turkSubmitTo": "https://workersandbox.mturk.com",
        }
    )
    assert arrival is not None and arrival.platform == Platform.MTURK
    assert (arrival.worker_id, arrival.assignment_ref, arrival.hit_ref) == ("W1", "A1", "H1")
    assert arrival.submit_to == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert not arrival.preview


def test_parse_arrival__mturk_preview_needs_no_worker() -> None:
    arrival = parse_arrival({"assignmentId": PREVIEW_ASSIGNMENT_ID, "hitId": "H1"})
    assert arrival is not None and arrival.preview and arrival.worker_id == ""


def test_parse_arrival__prolific() -> None:
    arrival = parse_arrival({"PROLIFIC_PID": "P1", "STUDY_ID": "S1", "SESSION_ID": "X1"})
    assert arrival is not None and arrival.platform == Platform.PROLIFIC
    assert (arrival.worker_id, arrival.assignment_ref, arrival.hit_ref) == ("P1", "X1", "S1")


def test_parse_arrival__neither_platform() -> None:
    assert parse_arrival({"page": "2"}) is None


@pytest.mark.parametrize(
    "params, missing",
    [
        ({"assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://x.test"}, "workerId"),
        ({"assignmentId": "A1", "workerId": "W", "turkSubmitTo": "https://x.test"}, "hitId"),
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
        external_submit_url("http://127.0.0.1:5/mturk/externalSubmit")
        == "http://127.0.0.1:5/mturk/externalSubmit"
    )
