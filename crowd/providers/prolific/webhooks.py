"""Prolific webhooks: verify the signature, parse the event, drop duplicates.

Prolific's documented scheme (https://docs.prolific.com/api-reference/webhooks/verifying): each request
has ``X-Prolific-Request-Signature`` and ``X-Prolific-Request-Timestamp`` (UNIX seconds); the signature is
``base64(HMAC-SHA256(secret, timestamp + body))``. We compare in constant time, and also refuse a timestamp
outside a replay window (our addition). Prolific's own Python example signs ``json.dumps(parsed body)``,
so when the raw body does not match we also try that serialisation.

Prolific's payloads carry no event id (``resource_id``, ``event_type``, ``status`` ...), so the dedup key is
an explicit ``event_id``/``id`` when present, else a hash of type, resource and status: the same
submission reaching the same status twice is one event.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import math
import time
from collections.abc import Mapping
from typing import Any, Optional

from crowd.providers.base import DedupStore
from crowd.providers.prolific.traits import NAME
from crowd.providers.webhooks import WebhookError, WebhookEvent

__all__ = ["WebhookError", "WebhookEvent", "parse_event", "receive", "sign", "verify_signature"]

logger = logging.getLogger(__name__)

PLATFORM = NAME
"""The platform whose webhooks these are (its batches, its deduplication keys)."""
SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
DEFAULT_TOLERANCE_SECONDS = 300
MAX_BODY_BYTES = 64 * 1024
"""Largest webhook body considered (Prolific's events are a few hundred bytes)."""
MAX_JSON_DEPTH = 20
"""Deepest JSON nesting parsed (Prolific's events nest two levels)."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Return Prolific's signature for a body: base64 HMAC-SHA256 over timestamp + body."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def _header(headers: Mapping[str, str], name: str) -> str:
    """Read a header case-insensitively (Django's request.headers is; a plain dict is not)."""
    for key, value in headers.items():
        if key.lower() == name.lower():
            return value
    return ""


def verify_signature(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    now: Optional[float] = None,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> None:
    """Check a webhook request's signature and timestamp.

    Args:
        secret: ``PROLIFIC_WEBHOOK_SECRET``.
        headers: the request headers.
        body: the raw request body.
        now: current UNIX time (tests); default ``time.time()``.
        tolerance_seconds: accepted clock difference, both ways (replay window).

    Raises:
        WebhookError: code ``no_secret``, ``missing_signature``, ``bad_timestamp``, ``stale`` or
            ``bad_signature``.
    """
    if not secret:
        raise WebhookError("PROLIFIC_WEBHOOK_SECRET is empty: refusing unsigned webhooks", "no_secret")
    signature = _header(headers, SIGNATURE_HEADER)
    timestamp = _header(headers, TIMESTAMP_HEADER)
    if not signature or not timestamp:
        raise WebhookError(f"missing {SIGNATURE_HEADER} or {TIMESTAMP_HEADER}", "missing_signature")
    try:
        sent = float(timestamp)
    except ValueError:
        sent = math.nan
    if not math.isfinite(sent):  # "nan" and "inf" parse as floats but would pass the window check
        raise WebhookError(f"{TIMESTAMP_HEADER} {timestamp[:40]!r} is not a UNIX time", "bad_timestamp")
    current = time.time() if now is None else now
    if abs(current - sent) > tolerance_seconds:
        raise WebhookError(
            f"{TIMESTAMP_HEADER} {timestamp} is {abs(current - sent):.0f}s from now "
            f"(limit {tolerance_seconds}s)",
            "stale",
        )
    if len(body) > MAX_BODY_BYTES:
        raise WebhookError(f"webhook body is {len(body)} bytes (at most {MAX_BODY_BYTES})", "bad_body")
    if hmac.compare_digest(sign(secret, timestamp, body), signature.strip()):
        return
    # Prolific's example signs json.dumps(parsed body): only then is the body parsed, bounded.
    payload = _loads(body)
    if payload is not None and hmac.compare_digest(
        sign(secret, timestamp, json.dumps(payload).encode()), signature.strip()
    ):
        return
    raise WebhookError("signature does not match the body", "bad_signature")


def _loads(body: bytes) -> Any:
    """The JSON in ``body``, or None when it is not JSON, nests too deep, or holds text no database takes.

    Nesting is bounded before parsing (a deeply nested body would exhaust Python's recursion); NUL, lone
    surrogates, ``NaN`` and infinite numbers are refused since the payload is stored (PostgreSQL's JSON
    takes none of them, and they are not JSON: Python's parser accepts them only as an extension).
    """
    if _depth(body) > MAX_JSON_DEPTH:
        return None
    try:
        payload = json.loads(body, parse_constant=_not_json, parse_float=_finite)
        text = json.dumps(payload, ensure_ascii=False)
        text.encode("utf-8")
    except (ValueError, RecursionError, UnicodeError):
        return None
    return None if "\\u0000" in text else payload


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is not a finite number")
    return value


def _depth(body: bytes) -> int:
    """Deepest bracket nesting in ``body`` (brackets inside strings count too: an upper bound)."""
    depth = deepest = 0
    for byte in body:
        if byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def parse_event(body: bytes) -> WebhookEvent:
    """Decode a webhook body into a ``WebhookEvent``.

    Raises:
        WebhookError: code ``bad_body`` when it is not a JSON object with ``event_type`` and ``resource_id``.
    """
    payload = _loads(body)
    if payload is None:
        raise WebhookError(f"webhook body is not JSON an event can hold: {body[:100]!r}", "bad_body")
    if not isinstance(payload, dict) or not payload.get("event_type") or not payload.get("resource_id"):
        raise WebhookError(f"webhook body lacks event_type/resource_id: {str(payload)[:200]}", "bad_body")
    event_type = str(payload["event_type"])
    resource_id = str(payload["resource_id"])
    status = str(payload.get("status") or "")
    explicit = payload.get("event_id") or payload.get("id")
    if explicit:
        event_id = str(explicit)
    else:
        event_id = hashlib.sha256(f"{event_type}|{resource_id}|{status}".encode()).hexdigest()[:32]
    return WebhookEvent(
        event_id=event_id,
        event_type=event_type,
        resource_id=resource_id,
        status=status,
        participant_id=str(payload.get("participant_id") or ""),
        unit_ref=str(payload.get("study_id") or ""),
        payload=payload,
    )


def receive(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    dedup: DedupStore,
    now: Optional[float] = None,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> Optional[WebhookEvent]:
    """Verify, parse and deduplicate one webhook request (what the view calls).

    Args:
        secret, headers, body, now, tolerance_seconds: as for ``verify_signature``.
        dedup: remembers handled event ids.

    Returns:
        The event to process, or None for a duplicate (answer 200 and do nothing).

    Raises:
        WebhookError: refuse the request (answer 400 for ``bad_body``, else 401/403).
    """
    verify_signature(secret, headers, body, now=now, tolerance_seconds=tolerance_seconds)
    event = parse_event(body)
    if not dedup.add(event.event_id):
        logger.info(
            "Webhook %s for %s(%s) is a duplicate: dropped",
            event.event_id,
            event.event_type,
            event.resource_id,
        )
        return None
    return event
