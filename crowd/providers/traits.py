"""What crowdqa knows about each platform without calling it; no Django and no platform SDK here.

A platform's rules (how a worker arrives, where they go when done, whether crowdqa or another site
hosts the work, what stopping a batch does) are class attributes and class methods of its traits class.
Each provider class inherits its traits (``MTurkProvider(MTurkTraits, CrowdProvider)``), and
:func:`traits_for` gives them for a stored ``Batch.provider`` / ``Worker.platform`` value without
building a client, so HIT pages ask the same object the Celery tasks use and never compare names.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Optional

from annotation.platforms import Platform
from crowd.providers.arrival import (
    MTURK_FRAME_ORIGINS,
    PREVIEW_ASSIGNMENT_ID,
    Arrival,
    ArrivalError,
    Completion,
    Finished,
    external_submit_url,
    origin_of,
    required_parameter,
    required_url_parameter,
)
from crowd.providers.errors import ProviderConfigError

NO_CONFIG: Mapping[str, Any] = MappingProxyType({})
"""No provider settings: no stand-in origins (the platforms' own sites only)."""


class PlatformTraits:
    """The rules of a platform that hold whatever its account or configuration.

    Attributes:
        name: the stored platform value (``Batch.provider``, ``Worker.platform``).
        short_name: what messages call the platform ("MTurk").
        external: True when the work is listed, submitted and paid on another site and crowdqa mirrors
            it by that site's ids (sync, platform refs, platform qualifications); False when crowdqa is
            the platform itself (the local crowd: invited workers who sign in here, a worker home, an
            assignment's own id as its reference).
        unit_per_hit: each local HIT is its own unit on the platform (an MTurk HIT), so an arrival or a
            submission names the HIT; otherwise the batch is one unit (a Prolific study) and a worker
            gets the next free HIT.
        publish_retry_safe: a publish whose answer was lost may be sent again because the platform
            finds what the first attempt created; Prolific would create a second study.
        stop_is_final: stopping expires the units for good (MTurk), so a pause is a stop and the batch
            cannot be listed again.
        returns_on_platform: the worker gives a HIT back on the platform's own site (MTurk), not here.
        min_rejection_chars: the shortest rejection message the platform takes (0: any non-empty one).
        frame_origins: the platform's sites that show a HIT page in their iframe.
        bonus_record_readable: the platform keeps a record of bonuses crowdqa can read to settle a
            payment whose answer was lost (``CrowdProvider.bonuses_on_record``).
    """

    name: ClassVar[str] = ""
    short_name: ClassVar[str] = ""
    external: ClassVar[bool] = True
    unit_per_hit: ClassVar[bool] = False
    publish_retry_safe: ClassVar[bool] = True
    stop_is_final: ClassVar[bool] = False
    returns_on_platform: ClassVar[bool] = False
    min_rejection_chars: ClassVar[int] = 0
    bonus_record_readable: ClassVar[bool] = False
    frame_origins: ClassVar[tuple[str, ...]] = ()
    do_not_call_in_templates: ClassVar[bool] = True
    """Templates read the traits class's attributes; Django must not instantiate it."""

    @classmethod
    def stand_in_origins(cls, config: Mapping[str, Any]) -> tuple[str, ...]:
        """Origins of a configured local stand-in for the platform (a fake server in tests, the demo),
        trusted as the platform's own sites are."""
        return ()

    @classmethod
    def read_arrival(cls, params: Mapping[str, str], config: Mapping[str, Any]) -> Optional[Arrival]:
        """The arrival this platform's URL parameters describe; None when they are not this platform's.

        Args:
            params: the query parameters.
            config: the provider settings (``crowd.providers.factory.config_from``).

        Raises:
            ArrivalError: the platform's parameters are present but incomplete or malformed.
        """
        return None

    @classmethod
    def completion(cls, finished: Finished, config: Mapping[str, Any]) -> Optional[Completion]:
        """Where a worker goes once their submission is stored; None: crowdqa thanks them itself."""
        return None


class MTurkTraits(PlatformTraits):
    """Amazon Mechanical Turk: an ExternalQuestion HIT per local HIT, ``externalSubmit`` when done."""

    name = Platform.MTURK.value
    short_name = "MTurk"
    unit_per_hit = True
    stop_is_final = True
    returns_on_platform = True
    bonus_record_readable = True
    frame_origins = MTURK_FRAME_ORIGINS

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
            return Arrival(Platform.MTURK, "", assignment_id, hit_id, preview=True)
        turk_submit_to = required_url_parameter(params, "turkSubmitTo")
        submit_to = external_submit_url(turk_submit_to, cls.stand_in_origins(config))
        return Arrival(
            Platform.MTURK,
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
        return Completion(post_to=target, assignment_id=finished.assignment_ref)


class ProlificTraits(PlatformTraits):
    """Prolific: one study per batch, the completion URL when done."""

    name = Platform.PROLIFIC.value
    short_name = "Prolific"
    publish_retry_safe = False
    min_rejection_chars = 100

    @classmethod
    def read_arrival(cls, params: Mapping[str, str], config: Mapping[str, Any]) -> Optional[Arrival]:
        """Prolific opens the study URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``."""
        if "PROLIFIC_PID" not in params:
            return None
        study_id = required_parameter(params, "STUDY_ID")
        return Arrival(
            Platform.PROLIFIC,
            required_parameter(params, "PROLIFIC_PID"),
            required_parameter(params, "SESSION_ID"),
            study_id,
            meta={"study_id": study_id},
        )

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


class LocalTraits(PlatformTraits):
    """The local crowd: crowdqa is the platform (invites, sign-in, the worker home)."""

    name = Platform.LOCAL.value
    short_name = "local crowd"
    external = False


def _fake() -> type[PlatformTraits]:
    from crowd.providers.fake.provider import FakeProvider  # imports base, which builds on this module

    return FakeProvider


_TRAITS: dict[str, type[PlatformTraits]] = {t.name: t for t in (MTurkTraits, ProlificTraits, LocalTraits)}
#: Test doubles, loaded on first use: they are not platforms a batch is stored with in production.
_TEST_TRAITS: dict[str, Callable[[], type[PlatformTraits]]] = {"fake": _fake}
#: The platforms whose workers arrive through URL parameters, in the order they are recognised.
ARRIVING = (MTurkTraits, ProlificTraits)


def traits_for(name: str) -> type[PlatformTraits]:
    """The traits of the platform stored as ``name`` (``fake``: the test provider's).

    Raises:
        ProviderConfigError: no platform has that name.
    """
    traits = _TRAITS.get(name)
    if traits is None and name in _TEST_TRAITS:
        traits = _TEST_TRAITS[name]()
    if traits is None:
        raise ProviderConfigError(f"unknown crowd platform {name!r}; known: {', '.join(sorted(_TRAITS))}")
    return traits


def arriving_platforms() -> tuple[Platform, ...]:
    """The platforms whose workers arrive through URL parameters (what a HIT link without them lacks)."""
    return tuple(Platform(traits.name) for traits in ARRIVING)


def hosted_platforms() -> tuple[str, ...]:
    """The stored names of the platforms crowdqa hosts itself (``external`` False): for queries."""
    return tuple(name for name, traits in _TRAITS.items() if not traits.external)


def parse_arrival(params: Mapping[str, str], config: Mapping[str, Any] = NO_CONFIG) -> Optional[Arrival]:
    """The platform arrival in query parameters; None when no platform sent one.

    Args:
        params: the query parameters.
        config: the provider settings (``crowd.providers.factory.config_from``): stand-in origins.

    Raises:
        ArrivalError: a platform's parameters are present but incomplete or malformed.
    """
    for traits in ARRIVING:
        arrival = traits.read_arrival(params, config)
        if arrival is not None:
            return arrival
    return None


def completion_for(
    platform: str, finished: Finished, config: Mapping[str, Any] = NO_CONFIG
) -> Optional[Completion]:
    """The completion step of ``platform`` for a stored submission (None: crowdqa thanks the worker)."""
    return traits_for(platform).completion(finished, config)


def framing_origins(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The origins that may show HIT pages in a frame: each arriving platform's sites and stand-ins."""
    origins: list[str] = []
    for traits in ARRIVING:
        origins.extend(traits.frame_origins)
        origins.extend(origin_of(o) for o in traits.stand_in_origins(config) if origin_of(o))
    return tuple(origins)
