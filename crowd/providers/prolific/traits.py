"""What crowdqa knows about Prolific without calling it: arrival parameters, the completion URL, fees.

Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``. The credential is
``SESSION_ID``; when done, the participant is redirected to Prolific's completion URL. No Django and no
``requests`` here: HIT pages import this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Optional

from annotation.platforms import PlatformOption
from crowd.providers.arrival import Arrival, ArrivalRefusal, Completion, Finished, required_parameter
from crowd.providers.costs import FeeSchedule
from crowd.providers.traits import PlatformTraits, WorkerIdPattern
from crowd.providers.webhooks import WebhookEvent

NAME = "prolific"
"""The name ``Batch.provider`` and ``Worker.platform`` store."""


def prolific_fees(rate: float = 1 / 3, vat_rate: float = 0.0) -> FeeSchedule:
    """Return Prolific's schedule with your workspace's service-fee rate (and VAT on the fee).

    Prolific charges a service fee on every participant payment, bonuses included. Its help centre states
    "~33.33% service charge on each bonus payment + VAT where applicable" ("How to Resolve an Underpaying
    Study with Bonus Payments", researcher-help.prolific.co). Rates differ by account type and over time.
    The bulk-bonus set-up answer carries Prolific's own ``fees`` figure, which is authoritative.
    """
    return FeeSchedule(NAME, commission_rate=rate, vat_rate=vat_rate)


REJECTION_CATEGORIES = frozenset(
    {
        "TOO_QUICKLY",
        "TOO_SLOWLY",
        "FAILED_INSTRUCTIONS",
        "INCOMP_LONGITUDINAL",
        "FAILED_CHECK",
        "LOW_EFFORT",
        "MALINGERING",
        "NO_CODE",
        "BAD_CODE",
        "NO_DATA",
        "UNSUPP_DEVICE",
        "OTHER",
    }
)
"""Prolific's rejection categories (``rejection_category`` of a rejection)."""

PROLIFIC_FEES = prolific_fees()
"""The default schedule: a 1/3 service fee and no VAT."""


class ProlificTraits(PlatformTraits):
    """Prolific: one study per batch, the completion URL when done."""

    name = NAME
    short_name = "Prolific"
    label = "Prolific"
    bonus_record_readable = True  # a submission lists its bonus_payments
    min_rejection_chars = 100
    rejection_categories = REJECTION_CATEGORIES
    # "Prolific's Attention and Comprehension Check Policy": rejecting on two failed checks, never one.
    attention_failures_to_reject = 2
    fees = PROLIFIC_FEES
    config_keys = (
        "PROLIFIC_API_URL",
        "PROLIFIC_API_TOKEN",
        "PROLIFIC_WORKSPACE_ID",
        "PROLIFIC_BLOCK_GROUP_ID",
        "PROLIFIC_RETRIES",
        "PROLIFIC_SESSION_CACHE_SECONDS",
        "PROLIFIC_WEBHOOK_SECRET",
    )
    provider_path = "crowd.providers.prolific.provider:ProlificProvider"
    options = MappingProxyType(
        {
            "prolific_filters": PlatformOption(
                list[dict[str, Any]], "a list of objects", "Prolific eligibility filters (its API's syntax)"
            )
        }
    )
    worker_id = WorkerIdPattern(
        kind="prolific_id", pattern=re.compile(r"\b[0-9a-f]{24}\b"), gate=re.compile(r"[0-9a-f]{24}")
    )

    @classmethod
    def environment(cls) -> dict[str, Any]:
        """The API (``PROLIFIC_API_URL``, ``PROLIFIC_API_TOKEN``), the workspace that pays and the block
        list's participant group, ``PROLIFIC_RETRIES`` (further attempts after a 429, honouring
        Retry-After, or a 5xx on a repeatable call; default 8), ``PROLIFIC_SESSION_CACHE_SECONDS`` (how long
        an answer about a session, checked at arrival, is reused; default 60) and the webhook secret."""
        return {
            "PROLIFIC_API_URL": os.environ.get("PROLIFIC_API_URL", "https://api.prolific.com/api/v1/"),
            "PROLIFIC_API_TOKEN": os.environ.get("PROLIFIC_API_TOKEN", ""),
            "PROLIFIC_WORKSPACE_ID": os.environ.get("PROLIFIC_WORKSPACE_ID", ""),
            "PROLIFIC_BLOCK_GROUP_ID": os.environ.get("PROLIFIC_BLOCK_GROUP_ID", ""),
            "PROLIFIC_RETRIES": int(os.environ.get("PROLIFIC_RETRIES", "8")),
            "PROLIFIC_SESSION_CACHE_SECONDS": int(os.environ.get("PROLIFIC_SESSION_CACHE_SECONDS", "60")),
            "PROLIFIC_WEBHOOK_SECRET": os.environ.get("PROLIFIC_WEBHOOK_SECRET", ""),
        }

    @classmethod
    def read_arrival(cls, params: Mapping[str, str], config: Mapping[str, Any]) -> Optional[Arrival]:
        """Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``."""
        if "PROLIFIC_PID" not in params:
            return None
        study_id = required_parameter(params, "STUDY_ID")
        return Arrival(
            NAME,
            required_parameter(params, "PROLIFIC_PID"),
            required_parameter(params, "SESSION_ID"),
            study_id,
            meta={"study_id": study_id},
        )

    @classmethod
    def confirm_arrival(cls, arrival: Arrival, config: Mapping[str, Any]) -> Optional[ArrivalRefusal]:
        """Prolific vouches for a session at arrival: its API must show ``SESSION_ID`` as an ACTIVE
        submission of that participant in that study (:mod:`crowd.providers.prolific.sessions`: bounded in
        time, cached). Skipped without ``PROLIFIC_API_TOKEN`` (no study can be published without one).

        Security behavior: a made-up session, another participant's or study's, or one no longer ACTIVE
        -> 403; Prolific not answering -> 409 "try again in a minute" (fail safe: no place either way).
        """
        if not config.get("PROLIFIC_API_TOKEN"):
            return None
        from crowd.providers.prolific import sessions  # the HTTP client: only when a session arrives

        check = sessions.confirm_session(config, arrival.hit_ref, arrival.worker_id, arrival.assignment_ref)
        if check.verdict is sessions.Verdict.CONFIRMED:
            return None
        if check.verdict is sessions.Verdict.UNAVAILABLE:
            message = "We could not confirm your session with Prolific. Please try again in a minute."
            return ArrivalRefusal(409, message, check.reason)
        message = "Prolific does not confirm this session. Please open the study again from Prolific."
        return ArrivalRefusal(403, message, check.reason)

    @classmethod
    def completion(cls, finished: Finished, config: Mapping[str, Any]) -> Optional[Completion]:
        """Redirect to Prolific's completion URL with the study's completion code."""
        if not finished.completion_code:
            return Completion(
                problem="Your answers are saved. The study has no completion code set; "
                "please tell the researcher through Prolific's messages."
            )
        from crowd.providers.prolific.api import completion_url  # keeps requests out of the HIT views

        return Completion(redirect_to=completion_url(finished.completion_code))

    @classmethod
    def read_webhook(
        cls, headers: Mapping[str, str], body: bytes, config: Mapping[str, Any]
    ) -> Optional[WebhookEvent]:
        """Check the signature (``PROLIFIC_WEBHOOK_SECRET``) and the timestamp, then decode the event."""
        from crowd.providers.prolific.webhooks import parse_event, verify_signature

        verify_signature(str(config.get("PROLIFIC_WEBHOOK_SECRET", "")), headers, body)
        return parse_event(body)
