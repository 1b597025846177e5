"""Signatures of webhook deliveries: HMAC-SHA256 over ``"{timestamp}.{body}"`` with the endpoint's secret.

The header reads ``Crowdqa-Signature: t=1767225600,v1=5257a8...`` (Stripe's layout): ``t`` is the Unix
time of the attempt and ``v1`` the hex digest; after a secret is rotated, a second ``v1`` made with the
old secret follows for the overlap window. Signing the timestamp with the body lets a receiver refuse
a captured request replayed later (:data:`DEFAULT_TOLERANCE_SECONDS`), and the constant-time comparison
leaks nothing about the expected digest. Pure: no Django, so receivers may copy :func:`verify`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence
from typing import Optional

SIGNATURE_HEADER = "Crowdqa-Signature"
SCHEME = "v1"
DEFAULT_TOLERANCE_SECONDS = 300
SECRET_PREFIX = "whsec_"


class SignatureError(ValueError):
    """A delivery's signature header is missing, malformed, stale or does not match."""


def new_secret() -> str:
    """A fresh endpoint secret (32 random bytes, URL-safe)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``b"{timestamp}." + body`` under ``secret``."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def sign(secret: str | Sequence[str], body: bytes, timestamp: Optional[int] = None) -> str:
    """The ``Crowdqa-Signature`` header value for ``body`` sent now (or at ``timestamp``).

    ``secret`` may be several secrets (the current one first, then one in its rotation overlap): the
    header then carries one ``v1`` per secret, and a receiver holding either accepts the delivery.
    """
    when = int(time.time()) if timestamp is None else int(timestamp)
    keys = [secret] if isinstance(secret, str) else list(secret)
    if not keys:
        raise ValueError("sign needs at least one secret")
    return ",".join([f"t={when}", *(f"{SCHEME}={digest(key, when, body)}" for key in keys)])


def verify(
    secret: str,
    header: str,
    body: bytes,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> int:
    """Check a delivery as a receiver should; returns its timestamp.

    Args:
        secret: the endpoint's secret (``whsec_...``).
        header: the ``Crowdqa-Signature`` header as received.
        body: the raw request body, byte for byte (not re-serialized JSON).
        tolerance: the largest accepted age (or clock skew) of ``t`` in seconds.
        now: the current Unix time (for tests).

    Raises:
        SignatureError: the header is malformed, ``t`` is outside the tolerance, or no ``v1`` matches.
    """
    fields: dict[str, list[str]] = {}
    for part in (header or "").split(","):
        name, sep, value = part.strip().partition("=")
        if sep:
            fields.setdefault(name, []).append(value)
    stamps = fields.get("t", [])
    if len(stamps) != 1 or not stamps[0].isdigit():
        raise SignatureError(f"{SIGNATURE_HEADER} has no timestamp t=: {header[:100]!r}")
    timestamp = int(stamps[0])
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise SignatureError(f"timestamp {timestamp} is more than {tolerance} s from now")
    expected = digest(secret, timestamp, body)
    if not any(hmac.compare_digest(expected, given) for given in fields.get(SCHEME, [])):
        raise SignatureError("no v1 signature matches the body")
    return timestamp
