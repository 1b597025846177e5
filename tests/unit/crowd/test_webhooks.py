"""Tests for crowd/providers/prolific/webhooks.py (Prolific's HMAC-SHA256 scheme, replay window, dedup)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from crowd.providers.base import InMemoryDedupStore
from crowd.providers.prolific.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookError,
    parse_event,
    receive,
    sign,
    verify_signature,
)
from tests.fakes.fixtures import load_response

SECRET = "whsec-test"
NOW = 1_709_290_000.0


def signed(payload: dict, timestamp: str = str(int(NOW)), secret: str = SECRET) -> tuple[dict, bytes]:
    body = json.dumps(payload).encode()
    return {SIGNATURE_HEADER: sign(secret, timestamp, body), TIMESTAMP_HEADER: timestamp}, body


def test_sign__matches_prolific_documented_formula() -> None:
    body = b'{"a": 1}'
    expected = base64.b64encode(
        hmac.new(SECRET.encode(), b"1700000000" + body, hashlib.sha256).digest()
    ).decode()
    assert sign(SECRET, "1700000000", body) == expected


def test_verify_signature__good_signature_accepted() -> None:
    headers, body = signed(load_response("prolific/webhook_submission_status_change"))
    verify_signature(SECRET, headers, body, now=NOW)
    verify_signature(SECRET, {k.lower(): v for k, v in headers.items()}, body, now=NOW)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ("wrong_secret", "bad_signature"),
        ("tampered", "bad_signature"),
        ("stale", "stale"),
        ("missing", "missing_signature"),
        ("no_secret", "no_secret"),
    ],
)
def test_verify_signature__bad_requests_rejected(change: str, code: str) -> None:
    payload = load_response("prolific/webhook_submission_status_change")
    headers, body = signed(payload, secret="other" if change == "wrong_secret" else SECRET)
    secret = "" if change == "no_secret" else SECRET
    now = NOW + 3600 if change == "stale" else NOW
    if change == "tampered":
        body = body.replace(b"AWAITING REVIEW", b"APPROVED")
    if change == "missing":
        headers = {}
    with pytest.raises(WebhookError) as info:
        verify_signature(secret, headers, body, now=now)
    assert info.value.code == code


def test_verify_signature__accepts_prolific_json_dumps_serialisation() -> None:
    payload = {"resource_id": "S1", "event_type": "study.status.change", "status": "COMPLETED"}
    compact = json.dumps(payload, separators=(",", ":")).encode()
    signature = sign(SECRET, "1709290000", json.dumps(payload).encode())
    verify_signature(SECRET, {SIGNATURE_HEADER: signature, TIMESTAMP_HEADER: "1709290000"}, compact, now=NOW)


def test_parse_event__derives_stable_id_without_event_id() -> None:
    body = json.dumps(load_response("prolific/webhook_submission_status_change")).encode()
    first, second = parse_event(body), parse_event(body)
    assert first.event_id == second.event_id and first.status == "AWAITING REVIEW"
    other = parse_event(body.replace(b"AWAITING REVIEW", b"APPROVED"))
    assert other.event_id != first.event_id
    assert (
        parse_event(json.dumps({"event_id": "e1", "event_type": "x", "resource_id": "r"}).encode()).event_id
        == "e1"
    )
    with pytest.raises(WebhookError) as info:
        parse_event(b'{"status": "x"}')
    assert info.value.code == "bad_body"


def test_receive__duplicate_event_dropped() -> None:
    dedup = InMemoryDedupStore()
    headers, body = signed(load_response("prolific/webhook_submission_status_change"))
    assert receive(SECRET, headers, body, dedup, now=NOW) is not None
    headers2, body2 = signed(
        load_response("prolific/webhook_submission_status_change"), timestamp=str(int(NOW) + 5)
    )
    assert receive(SECRET, headers2, body2, dedup, now=NOW) is None
