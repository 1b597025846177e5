"""Confirm a Prolific session with Prolific's API before it is given a place.

Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``; anyone who knows the
study id can make up the other two. ``SESSION_ID`` is the submission id, so ``GET /submissions/{id}/``
tells whether the session exists, whose it is, in which study, and whether it is still running
(``ACTIVE``). This lookup sits on a worker's page load: one attempt, a short timeout, no retries, and the
answer is cached (Django's cache) per session for a short while, so a reload costs no second call.

Fail safe: when Prolific does not answer (timeout, 5xx, throttled, bad token) the session is
``UNAVAILABLE`` and the caller gives no place; only a clear "confirmed" or "refused" is cached, never an
outage.
"""

from __future__ import annotations

import enum
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from crowd.providers.prolific import errors
from crowd.providers.prolific.api import DEFAULT_API_URL, ProlificClient, Submissions

logger = logging.getLogger(__name__)

#: Prolific's ids are 24 hex characters; anything else is never sent into a URL path.
SESSION_ID = re.compile(r"[0-9A-Za-z]{1,64}")
#: (connect, read) seconds: a worker waits on this call.
TIMEOUT = (2.0, 3.0)
#: seconds a confirmed or refused answer is reused (``PROLIFIC_SESSION_CACHE_SECONDS``).
CACHE_SECONDS = 60


class Verdict(enum.Enum):
    """What Prolific said about a session."""

    CONFIRMED = "confirmed"
    REFUSED = "refused"
    UNAVAILABLE = "unavailable"


@dataclass(frozen=True)
class SessionCheck:
    """The verdict and, for the log and the worker's page, why."""

    verdict: Verdict
    reason: str


def _cache_key(session_id: str) -> str:
    return f"prolific-session:{session_id}"


def _judge(record: Mapping[str, Any], study_id: str, participant_id: str) -> SessionCheck:
    if str(record.get("participant_id", "")) != participant_id:
        return SessionCheck(Verdict.REFUSED, "the session belongs to another participant")
    if str(record.get("study_id", "")) != study_id:
        return SessionCheck(Verdict.REFUSED, "the session belongs to another study")
    status = str(record.get("status", ""))
    if status != "ACTIVE":
        return SessionCheck(Verdict.REFUSED, f"the session is {status or 'of unknown status'}, not ACTIVE")
    return SessionCheck(Verdict.CONFIRMED, "Prolific shows the session ACTIVE")


def confirm_session(
    config: Mapping[str, Any], study_id: str, participant_id: str, session_id: str
) -> SessionCheck:
    """Ask Prolific whether ``session_id`` is an active submission of ``participant_id`` in ``study_id``.

    Args:
        config: the provider settings (``PROLIFIC_API_TOKEN``, ``PROLIFIC_API_URL``,
            ``PROLIFIC_SESSION_CACHE_SECONDS``).

    Returns:
        CONFIRMED, REFUSED (unknown id, another participant or study, not ACTIVE), or UNAVAILABLE
        (Prolific did not answer in time or answered an error other than 404; not cached).
    """
    if not SESSION_ID.fullmatch(session_id):
        return SessionCheck(Verdict.REFUSED, "the session id is not a Prolific id")
    key = _cache_key(session_id)
    cached = cache.get(key)
    if cached is not None:
        return _judge(cached, study_id, participant_id) if cached else _unknown()
    try:
        client = ProlificClient(
            token=str(config.get("PROLIFIC_API_TOKEN") or ""),
            base_url=str(config.get("PROLIFIC_API_URL") or DEFAULT_API_URL),
            timeout=TIMEOUT,
            retries=0,
        )
        record = Submissions.retrieve(client, session_id)
    except errors.NotFoundError:
        record = {}
    except errors.ProviderError as exc:
        logger.warning("Prolific session %s could not be confirmed: %s", session_id, exc)
        return SessionCheck(Verdict.UNAVAILABLE, f"Prolific did not answer ({type(exc).__name__})")
    if not isinstance(record, Mapping):
        logger.warning("Prolific session %s: unexpected answer %r", session_id, record)
        return SessionCheck(Verdict.UNAVAILABLE, "Prolific gave an unexpected answer")
    seconds = config.get("PROLIFIC_SESSION_CACHE_SECONDS")
    kept: dict[str, Any] = {}
    if record:  # older answers name the participant ``participant`` (as ``provider.to_submission`` reads)
        participant = record.get("participant_id") or record.get("participant")
        kept = {
            "participant_id": participant,
            "study_id": record.get("study_id"),
            "status": record.get("status"),
        }
    cache.set(key, kept, CACHE_SECONDS if seconds is None else int(seconds))
    return _judge(kept, study_id, participant_id) if kept else _unknown()


def _unknown() -> SessionCheck:
    return SessionCheck(Verdict.REFUSED, "Prolific does not know this session")
