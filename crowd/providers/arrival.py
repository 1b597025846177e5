"""An arrival at a HIT page and a completion step: the values and URL checks the platforms share.

Each platform's traits (``crowd.providers.<platform>.traits``) read its own arrival parameters and give
its completion step with these (no Django here, so the rules are tested without a database):

- MTurk opens the ExternalQuestion URL with ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``
  (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` while the worker only previews the HIT). The credential is
  ``assignmentId``; when done, the page posts it to ``{turkSubmitTo}/mturk/externalSubmit``, and
  ``turkSubmitTo`` is accepted only for MTurk's worker hosts (and a configured test endpoint), because the
  after-submit page auto-posts there.
- Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``. The credential is
  ``SESSION_ID``; when done, the participant is redirected to Prolific's completion URL.

A bare worker id is never a credential: the admission rule (worker/admission.py) binds a
local assignment to the platform's session id, never to the worker id alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

MAX_PARAMETER_CHARS = 100
"""Longest accepted id parameter (MTurk ids are 30-64 characters, Prolific's 24); the id columns hold 100."""


class ArrivalError(ValueError):
    """The URL parameters are incomplete or malformed; the message says which one."""


@dataclass(frozen=True)
class Arrival:
    """A worker arriving from a crowd platform.

    Attributes:
        platform: the stored name of the platform the worker came from.
        worker_id: the platform's worker id ("" while previewing on MTurk).
        assignment_ref: MTurk's assignmentId or Prolific's SESSION_ID: the per-session credential.
        hit_ref: MTurk's hitId or Prolific's STUDY_ID.
        submit_to: MTurk's externalSubmit URL ("" on Prolific).
        preview: True while an MTurk worker previews the HIT before accepting it.
        meta: what the assignment keeps of the arrival (``Assignment.platform_meta``).
    """

    platform: str
    worker_id: str
    assignment_ref: str
    hit_ref: str
    submit_to: str = ""
    preview: bool = False
    meta: Mapping[str, str] = field(default_factory=dict)


def required_parameter(params: Mapping[str, str], name: str) -> str:
    """The stripped value of an id parameter; refused when absent, too long or not printable ASCII."""
    value = (params.get(name) or "").strip()
    if not value:
        raise ArrivalError(f"the link is missing the '{name}' parameter")
    if len(value) > MAX_PARAMETER_CHARS:
        raise ArrivalError(
            f"the '{name}' parameter is too long ({len(value)} characters, at most {MAX_PARAMETER_CHARS})"
        )
    if not value.isprintable() or not value.isascii():
        raise ArrivalError(f"the '{name}' parameter contains characters a platform id never has")
    return value


def required_url_parameter(params: Mapping[str, str], name: str) -> str:
    """The stripped value of a URL parameter; refused when absent or too long."""
    value = (params.get(name) or "").strip()
    if not value:
        raise ArrivalError(f"the link is missing the '{name}' parameter")
    if len(value) > 500:
        raise ArrivalError(f"the '{name}' parameter is too long ({len(value)} characters)")
    return value


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lowercased ("" when it has none)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    if not parts.scheme or not parts.hostname:
        return ""
    return f"{parts.scheme.lower()}://{parts.hostname.lower()}" + (f":{port}" if port else "")


@dataclass(frozen=True)
class ArrivalRefusal:
    """A platform's answer that it does not vouch for a new session: the HTTP status and the message the
    worker sees, and the reason for the log."""

    status: int
    message: str
    reason: str


@dataclass(frozen=True)
class Finished:
    """What crowdqa stored about a submitted assignment that its platform's completion step needs.

    Attributes:
        submit_to: MTurk's externalSubmit URL recorded at arrival ("" elsewhere).
        assignment_ref: the platform's assignment id.
        completion_code: the batch's Prolific completion code ("" elsewhere).
    """

    submit_to: str = ""
    assignment_ref: str = ""
    completion_code: str = ""


@dataclass(frozen=True)
class Completion:
    """Where a worker goes once their submission is stored.

    Attributes:
        post_to: MTurk's externalSubmit URL the page posts ``assignment_id`` to ("" otherwise).
        page: the template of the page that posts it.
        assignment_id: the platform assignment id posted to MTurk.
        redirect_to: Prolific's completion URL ("" otherwise).
        problem: why neither is possible (no completion code, a stored ``turkSubmitTo`` that is not MTurk).
    """

    post_to: str = ""
    page: str = ""
    assignment_id: str = ""
    redirect_to: str = ""
    problem: str = ""
