"""Who is arriving at a HIT page, read from the platform's URL parameters, and where they go when done.

Each platform owns its arrival parameters, its per-session credential and its completion step (no Django
here, so the rules are tested without a database):

- MTurk opens the ExternalQuestion URL with ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``
  (``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` while the worker only previews the HIT). The credential is
  ``assignmentId``; when done, the page posts it to ``{turkSubmitTo}/mturk/externalSubmit``, and
  ``turkSubmitTo`` is accepted only for MTurk's worker hosts (and a configured test endpoint), because the
  after-submit page auto-posts there.
- Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``. The credential is
  ``SESSION_ID``; when done, the participant is redirected to Prolific's completion URL.

A bare worker id is never a credential: the admission rule (annotation/services/admission.py) binds a
local assignment to the platform's session id, never to the worker id alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlsplit

from annotation.platforms import Platform

PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
MAX_PARAMETER_CHARS = 100
"""Longest accepted id parameter (MTurk ids are 30-64 characters, Prolific's 24); the id columns hold 100."""

MTURK_WORKER_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
"""Where MTurk's worker site lives (production, sandbox): the only externalSubmit targets in production."""
MTURK_FRAME_ORIGINS = ("https://worker.mturk.com", *MTURK_WORKER_ORIGINS)
"""The MTurk pages that show a HIT in their iframe (the worker site, its classic and sandbox hosts)."""


class ArrivalError(ValueError):
    """The URL parameters are incomplete or malformed; the message says which one."""


@dataclass(frozen=True)
class Arrival:
    """A worker arriving from a crowd platform.

    Attributes:
        platform: MTurk or Prolific.
        worker_id: the platform's worker id ("" while previewing on MTurk).
        assignment_ref: MTurk's assignmentId or Prolific's SESSION_ID: the per-session credential.
        hit_ref: MTurk's hitId or Prolific's STUDY_ID.
        submit_to: MTurk's externalSubmit URL ("" on Prolific).
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
    if len(value) > MAX_PARAMETER_CHARS:
        raise ArrivalError(
            f"the '{name}' parameter is too long ({len(value)} characters, at most {MAX_PARAMETER_CHARS})"
        )
    if not value.isprintable() or not value.isascii():
        raise ArrivalError(f"the '{name}' parameter contains characters a platform id never has")
    return value


def parse_arrival(params: Mapping[str, str], test_origins: Iterable[str] = ()) -> Optional[Arrival]:
    """Read an MTurk or Prolific arrival from query parameters; None when neither platform sent it.

    Args:
        params: the query parameters.
        test_origins: extra ``scheme://host[:port]`` origins accepted as ``turkSubmitTo`` (a local fake).

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
            submit_to=external_submit_url(_required_url(params, "turkSubmitTo"), test_origins),
        )
    if "PROLIFIC_PID" in params:
        return Arrival(
            Platform.PROLIFIC,
            _required(params, "PROLIFIC_PID"),
            _required(params, "SESSION_ID"),
            _required(params, "STUDY_ID"),
        )
    return None


def _required_url(params: Mapping[str, str], name: str) -> str:
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


def external_submit_url(turk_submit_to: str, test_origins: Iterable[str] = ()) -> str:
    """``{turkSubmitTo}/mturk/externalSubmit`` for a ``turkSubmitTo`` on MTurk's worker hosts.

    Accepted: exactly ``https://www.mturk.com`` or ``https://workersandbox.mturk.com`` (or one of
    ``test_origins``), with no user name, password, query or fragment, and no path but
    ``/mturk/externalSubmit``. Everything else (another scheme, an evil or look-alike host,
    ``user:pw@`` URLs) is refused, because the after-submit page posts the assignment id there.

    Raises:
        ArrivalError: naming the refused value.
    """
    base = turk_submit_to.strip().rstrip("/")
    try:
        parts = urlsplit(base)
        parts.port  # noqa: B018 - a malformed port raises here
    except ValueError as exc:
        raise ArrivalError(f"turkSubmitTo is not a valid URL: {turk_submit_to!r}") from exc
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ArrivalError(f"turkSubmitTo must be an http(s) URL, got {turk_submit_to!r}")
    allowed = set(MTURK_WORKER_ORIGINS) | {origin_of(o) for o in test_origins if origin_of(o)}
    origin = origin_of(base)
    if (
        "@" in parts.netloc
        or parts.query
        or parts.fragment
        or parts.path not in ("", "/mturk/externalSubmit")
        or origin not in allowed
        or parts.netloc.lower() != origin.split("://", 1)[1]
    ):
        raise ArrivalError(
            f"turkSubmitTo must be MTurk's worker site (www.mturk.com or workersandbox.mturk.com), "
            f"got {turk_submit_to[:120]!r}"
        )
    return f"{origin}/mturk/externalSubmit"


@dataclass(frozen=True)
class Completion:
    """Where a worker goes once their submission is stored.

    Attributes:
        post_to: MTurk's externalSubmit URL the page posts ``assignment_id`` to ("" otherwise).
        assignment_id: the platform assignment id posted to MTurk.
        redirect_to: Prolific's completion URL ("" otherwise).
        problem: why neither is possible (no completion code, a stored ``turkSubmitTo`` that is not MTurk).
    """

    post_to: str = ""
    assignment_id: str = ""
    redirect_to: str = ""
    problem: str = ""


def completion_for(
    platform: str,
    *,
    submit_to: str = "",
    assignment_ref: str = "",
    completion_code: str = "",
    test_origins: Iterable[str] = (),
) -> Optional[Completion]:
    """The platform's completion step for a stored submission; None for the local crowd.

    The stored ``turkSubmitTo`` is checked again against MTurk's hosts, so an assignment recorded before
    the allow-list (or edited by hand) can never make the page post to another site.
    """
    if platform == Platform.MTURK:
        try:
            target = external_submit_url(submit_to, test_origins)
        except ArrivalError:
            return Completion(
                problem="Your answers are saved, but this HIT was not opened from MTurk's site, so it cannot "
                "be submitted there from here. Please contact the requester through MTurk."
            )
        return Completion(post_to=target, assignment_id=assignment_ref)
    if platform == Platform.PROLIFIC:
        if not completion_code:
            return Completion(
                problem="Your answers are saved. The study has no completion code set; "
                "please tell the researcher through Prolific's messages."
            )
        return Completion(redirect_to=prolific_completion_url(completion_code))
    return None


def prolific_completion_url(completion_code: str) -> str:
    """Where a Prolific participant goes when the study is done (empty without a completion code)."""
    from crowd.providers.prolific_api import completion_url  # keeps requests out of the HIT views

    return completion_url(completion_code) if completion_code else ""
