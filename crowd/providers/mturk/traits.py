"""What crowdqa knows about MTurk without calling it: arrival parameters, ``externalSubmit``, fees.

MTurk opens the ExternalQuestion URL with ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``
(``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` while the worker only previews the HIT). The credential is
``assignmentId``; when done, the page posts it to ``{turkSubmitTo}/mturk/externalSubmit``, and
``turkSubmitTo`` is accepted only for MTurk's worker hosts (and a configured test endpoint), because the
after-submit page auto-posts there. No Django and no boto3 here: HIT pages import this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional
from urllib.parse import urlsplit

from config.env import env_bool
from crowd.providers.arrival import (
    Arrival,
    ArrivalError,
    Completion,
    Finished,
    origin_of,
    required_parameter,
    required_url_parameter,
)
from crowd.providers.costs import FeeSchedule
from crowd.providers.traits import PlatformTraits, WorkerIdPattern

NAME = "mturk"
"""The name ``Batch.provider`` and ``Worker.platform`` store."""
PREVIEW_ASSIGNMENT_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
MTURK_WORKER_ORIGINS = ("https://www.mturk.com", "https://workersandbox.mturk.com")
"""Where MTurk's worker site lives (production, sandbox): the only externalSubmit targets in production."""
MTURK_FRAME_ORIGINS = ("https://worker.mturk.com", *MTURK_WORKER_ORIGINS)
"""The MTurk pages that show a HIT in their iframe (the worker site, its classic and sandbox hosts)."""

SUBMIT_PAGE = "mturk/submit.html"
"""The page that posts the assignment id to MTurk's ``externalSubmit`` once the answers are stored."""

MTURK_FEES = FeeSchedule(
    NAME,
    commission_rate=0.20,
    large_batch_rate=0.20,
    large_batch_threshold=10,
    min_fee_cents=1,
)
"""20% commission on rewards and bonuses, at least $0.01 per assignment; HITs with 10 or more assignments
pay another 20% on the reward (not on bonuses). https://requester.mturk.com/pricing"""


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


class MTurkTraits(PlatformTraits):
    """Amazon Mechanical Turk: an ExternalQuestion HIT per local HIT, ``externalSubmit`` when done."""

    name = NAME
    short_name = "MTurk"
    label = "Amazon Mechanical Turk"
    unit_per_hit = True
    vouches_at_arrival = False
    stop_is_final = True
    returns_on_platform = True
    completion_uses_code = False  # the page posts the assignment id to turkSubmitTo
    bonus_record_readable = True
    platform_auto_approval_seconds = 3 * 24 * 3600  # PublishRequest.auto_approve_seconds' default
    frame_origins = MTURK_FRAME_ORIGINS
    fees = MTURK_FEES
    config_keys = (
        "MTURK_SANDBOX",
        "AWS_ENDPOINT_URL_MTURK",
        "MTURK_EXTRA_SUBMIT_ORIGINS",
        "MTURK_MAX_ATTEMPTS",
    )
    provider_path = "crowd.providers.mturk.provider:MTurkProvider"
    worker_id = WorkerIdPattern(
        kind="mturk_worker_id",
        # Upper case as MTurk writes them, or all lower case as a worker may type one (then with digits
        # inside, not only at the end, so that "answersformorethan60" or "approximately335" do not match).
        pattern=re.compile(
            r"\b(?:A(?=[A-Z0-9]*\d)[A-Z0-9]{12,20}|a(?=[a-z0-9]*\d[a-z])(?=(?:[a-z]*\d){2})[a-z0-9]{12,20})\b"
        ),
        gate=re.compile(r"[Aa][A-Za-z0-9]{12}"),
    )

    @classmethod
    def environment(cls) -> dict[str, Any]:
        """``MTURK_SANDBOX`` (default true), ``MTURK_MAX_ATTEMPTS`` (attempts per call under throttling and
        transient faults, botocore's adaptive mode; default 10) and ``MTURK_EXTRA_SUBMIT_ORIGINS`` from
        ``CROWDQA_MTURK_TEST_SUBMIT_ORIGINS`` (comma-separated ``scheme://host[:port]`` of a local MTurk
        stand-in, accepted as ``turkSubmitTo`` besides MTurk's worker sites). boto3 reads the AWS
        credentials and ``AWS_ENDPOINT_URL_MTURK`` from the environment itself."""
        origins = os.environ.get("CROWDQA_MTURK_TEST_SUBMIT_ORIGINS", "")
        return {
            "MTURK_SANDBOX": env_bool("MTURK_SANDBOX", default=True),
            "MTURK_MAX_ATTEMPTS": int(os.environ.get("MTURK_MAX_ATTEMPTS", "10")),
            "MTURK_EXTRA_SUBMIT_ORIGINS": [o.strip() for o in origins.split(",") if o.strip()],
        }

    @classmethod
    def stand_in_origins(cls, config: Mapping[str, Any]) -> tuple[str, ...]:
        """``MTURK_EXTRA_SUBMIT_ORIGINS`` and the host of ``AWS_ENDPOINT_URL_MTURK`` (boto3 reads that
        variable from the environment, so the pages trust the server the client talks to)."""
        extra = [o for o in config.get("MTURK_EXTRA_SUBMIT_ORIGINS", ()) if o]
        endpoint = os.environ.get("AWS_ENDPOINT_URL_MTURK", "")
        return (*extra, endpoint) if endpoint else tuple(extra)

    @classmethod
    def read_arrival(cls, params: Mapping[str, str], config: Mapping[str, Any]) -> Optional[Arrival]:
        """MTurk opens the HIT with ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo``.

        ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` is a preview, which names no worker.
        """
        if "assignmentId" not in params:
            return None
        assignment_id = required_parameter(params, "assignmentId")
        hit_id = required_parameter(params, "hitId")
        if assignment_id == PREVIEW_ASSIGNMENT_ID:
            return Arrival(NAME, "", assignment_id, hit_id, preview=True)
        turk_submit_to = required_url_parameter(params, "turkSubmitTo")
        submit_to = external_submit_url(turk_submit_to, cls.stand_in_origins(config))
        return Arrival(
            NAME,
            required_parameter(params, "workerId"),
            assignment_id,
            hit_id,
            submit_to=submit_to,
            meta={"turk_submit_to": submit_to},
        )

    @classmethod
    def completion(cls, finished: Finished, config: Mapping[str, Any]) -> Optional[Completion]:
        """Post the assignment id to the stored ``turkSubmitTo``, checked again against MTurk's hosts.

        An assignment recorded before the allow-list (or edited by hand) can never make the page post to
        another site.
        """
        try:
            target = external_submit_url(finished.submit_to, cls.stand_in_origins(config))
        except ArrivalError:
            return Completion(
                problem="Your answers are saved, but this HIT was not opened from MTurk's site, so it cannot "
                "be submitted there from here. Please contact the requester through MTurk."
            )
        return Completion(post_to=target, page=SUBMIT_PAGE, assignment_id=finished.assignment_ref)

    @classmethod
    def finished(cls, meta: Mapping[str, Any], assignment_ref: str, completion_code: str) -> Finished:
        """The ``turkSubmitTo`` the arrival kept (checked again by :meth:`completion`)."""
        return Finished(submit_to=str(meta.get("turk_submit_to", "")), assignment_ref=assignment_ref)
