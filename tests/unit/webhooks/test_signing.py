"""Signing and verifying deliveries (pure: no Django)."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from webhooks.signing import SignatureError, new_secret, sign, verify

BODY = b'{"id":"e1","type":"ping","data":{}}'


def test_sign__is_hmac_sha256_of_timestamp_dot_body() -> None:
    expected = hmac.new(b"whsec_k", b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert sign("whsec_k", BODY, timestamp=1700000000) == f"t=1700000000,v1={expected}"


def test_verify__accepts_a_fresh_signature() -> None:
    header = sign("whsec_k", BODY, timestamp=1700000000)
    assert verify("whsec_k", header, BODY, now=1700000100) == 1700000000


@pytest.mark.parametrize(
    ("secret", "body", "now"),
    [
        ("whsec_other", BODY, 1700000000),  # wrong secret
        ("whsec_k", BODY + b" ", 1700000000),  # body changed by one byte
        ("whsec_k", BODY, 1700000301),  # older than the tolerance (a replayed capture)
        ("whsec_k", BODY, 1699999600),  # from the future beyond the tolerance
    ],
)
def test_verify__refuses_a_wrong_secret_body_or_time(secret: str, body: bytes, now: int) -> None:
    header = sign("whsec_k", BODY, timestamp=1700000000)
    with pytest.raises(SignatureError):
        verify(secret, header, body, now=now)


@pytest.mark.parametrize("header", ["", "v1=abc", "t=soon,v1=abc", "t=1,t=2,v1=abc", "garbage"])
def test_verify__refuses_a_malformed_header(header: str) -> None:
    with pytest.raises(SignatureError):
        verify("whsec_k", header, BODY, now=1)


def test_verify__accepts_any_of_several_v1_values() -> None:
    good = sign("whsec_k", BODY, timestamp=1700000000).split(",")[1]
    assert verify("whsec_k", f"t=1700000000,v1=00ff,{good}", BODY, now=1700000000) == 1700000000


def test_new_secret__is_random_and_prefixed() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_") and first != second and len(first) > 40


def test_sign__several_secrets_give_one_v1_each_and_either_verifies() -> None:
    header = sign(["whsec_new", "whsec_old"], BODY, timestamp=1700000000)
    fields = header.split(",")
    assert fields[0] == "t=1700000000" and len(fields) == 3
    assert fields[1] == sign("whsec_new", BODY, timestamp=1700000000).split(",")[1]
    assert fields[2] == sign("whsec_old", BODY, timestamp=1700000000).split(",")[1]
    for secret in ("whsec_new", "whsec_old"):
        assert verify(secret, header, BODY, now=1700000000) == 1700000000
    with pytest.raises(SignatureError):
        verify("whsec_third", header, BODY, now=1700000000)
    with pytest.raises(ValueError):
        sign([], BODY)
