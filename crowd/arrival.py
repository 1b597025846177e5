"""Who is arriving at a HIT page, read from the platform's URL parameters (no Django).

MTurk opens the ExternalQuestion URL with ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``
(``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` while the worker only previews the HIT); Prolific opens the
study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID`` (DESIGN.md, HIT form contract). Platform
quirks stay here so the views only see an :class:`Arrival`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"


class ArrivalError(ValueError):
    """The URL parameters are incomplete or malformed; the message says which one."""


class Platform(enum.StrEnum):
    """Where a worker comes from."""

    MTURK = "mturk"
    PROLIFIC = "prolific"


@dataclass(frozen=True)
class Arrival:
    """A worker arriving from a crowd platform.

    Attributes:
        platform: MTurk or Prolific.
        worker_id: the platform's worker id ("" while previewing on MTurk).
        assignment_ref: MTurk's assignmentId or Prolific's SESSION_ID (the submission id).
        hit_ref: MTurk's hitId or Prolific's STUDY_ID.
        submit_to: MTurk's turkSubmitTo ("" on Prolific).
        preview: True while an MTurk worker previews the HIT before accepting it.
    """

    platform: Platform
    worker_id: str
    assignment_ref: str
    hit_ref: str
    submit_to: str = ""
    preview: bool = False


def _required(params: Mapping[str, str], name: str) -> str:
    value = (params.get(name) or "").strip()
    if not value:
        raise ArrivalError(f"the link is missing the '{name}' parameter")
    if len(value) > 200:
        raise ArrivalError(f"the '{name}' parameter is too long ({len(value)} characters)")
    return value


def parse_arrival(params: Mapping[str, str]) -> Optional[Arrival]:
    """Read an MTurk or Prolific arrival from query parameters; None when neither platform sent it.

    Raises:
        ArrivalError: when a platform's parameters are present but incomplete or malformed.
    """
    if "assignmentId" in params:
        assignment_id = _required(params, "assignmentId")
        hit_id = _required(params, "hitId")
        if assignment_id == PREVIEW_ASSIGNMENT_ID:
            return Arrival(Platform.MTURK, "", assignment_id, hit_id, preview=True)
        return Arrival(
            Platform.MTURK,
            _required(params, "workerId"),
            assignment_id,
            hit_id,
            submit_to=external_submit_url(_required(params, "turkSubmitTo")),
        )
    if "PROLIFIC_PID" in params:
        return Arrival(
            Platform.PROLIFIC,
            _required(params, "PROLIFIC_PID"),
            _required(params, "SESSION_ID"),
            _required(params, "STUDY_ID"),
        )
    return None


def external_submit_url(turk_submit_to: str) -> str:
    """``{turkSubmitTo}/mturk/externalSubmit`` for an http(s) ``turkSubmitTo``.

    Raises:
        ArrivalError: for another scheme (a javascript: URL must never become a form action).
    """
    base = turk_submit_to.strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ArrivalError(f"turkSubmitTo must be an http(s) URL, got {turk_submit_to!r}")
    if base.endswith("/mturk/externalSubmit"):
        return base
    return f"{base}/mturk/externalSubmit"
