"""What crowdqa knows about each platform without calling it; no Django and no platform SDK here.

A platform's rules (how a worker arrives, where they go when done, whether crowdqa or another site
hosts the work, what stopping a batch does, its fees) are class attributes and class methods of its
traits class, in its own package (``crowd.providers.mturk.traits``...). Each provider class inherits its
traits (``MTurkProvider(MTurkTraits, CrowdProvider)``), and :func:`traits_for` gives them for a stored
``Batch.provider`` / ``Worker.platform`` value without building a client, so HIT pages ask the same
object the Celery tasks use and never compare names.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Optional

from annotation.platforms import Platform, PlatformOption
from crowd.providers.arrival import Arrival, ArrivalRefusal, Completion, Finished, origin_of
from crowd.providers.costs import NO_FEES, FeeSchedule
from crowd.providers.errors import ProviderConfigError
from crowd.providers.webhooks import WebhookEvent

NO_CONFIG: Mapping[str, Any] = MappingProxyType({})
"""No provider settings: no stand-in origins (the platforms' own sites only)."""


@dataclass(frozen=True)
class WorkerIdPattern:
    """How a platform's raw worker ids look, so a release that holds one is refused (``exports.privacy``).

    Attributes:
        kind: the finding's name in the privacy report (``mturk_worker_id``).
        pattern: the full pattern.
        gate: a cheap necessary condition of ``pattern`` (a literal or one character class, which Python's
            re scans fast); the full pattern runs only where it fires.
    """

    kind: str
    pattern: re.Pattern[str]
    gate: re.Pattern[str]


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
        vouches_at_arrival: the platform vouches for a session when it arrives (crowdqa itself for the
            local crowd, Prolific's API); False for MTurk, which confirms an assignment only once it is
            submitted, so an arrival's session counts for slots and caps only after sync or review
            confirmed it (``Assignment.vouched``).
        publish_retry_safe: a publish whose answer was lost may be sent again because the provider
            finds what the first attempt created (MTurk HITs by annotation and token, the Prolific study
            by its recorded id or internal name).
        stop_is_final: stopping expires the units for good (MTurk), so a pause is a stop and the batch
            cannot be listed again.
        returns_on_platform: the worker gives a HIT back on the platform's own site (MTurk), not here.
        min_rejection_chars: the shortest rejection message the platform takes (0: any non-empty one).
        frame_origins: the platform's sites that show a HIT page in their iframe.
        bonus_record_readable: the platform keeps a record of bonuses crowdqa can read to settle a
            payment whose answer was lost (``CrowdProvider.bonuses_on_record``).
        fees: what the platform charges on rewards and bonuses (:class:`crowd.providers.costs.FeeSchedule`).
        config_keys: the settings the platform's provider reads (``crowd.providers.factory.config_from``);
            :meth:`environment` gives their values from the environment, and a Django setting of the same
            name takes precedence.
        provider_path: ``module:Class`` of the platform's ``CrowdProvider``, imported when one is built.
        rejection_categories: the categories a rejection may name on the platform (empty: none; the
            reason alone is sent).
        label: the platform's name as researchers read it (choices, the batch page).
        options: launch settings of the platform's own that it reads from ``Batch.options``, by key
            (:class:`annotation.platforms.PlatformOption`: the value's type, shape and meaning). The
            options schema takes them in once the platform is registered, and they are handed to its
            provider in ``PublishRequest.extra`` and taken over by a stage-2 batch (Prolific's
            eligibility filters).
        worker_id: how the platform's worker ids look, for the release privacy gate
            (:class:`WorkerIdPattern`); None for a platform whose worker ids crowdqa makes itself.
        platform_auto_approval_seconds: the platform approves unreviewed work on its own after this
            long unless a batch sets its own delay, which it is then told (MTurk's
            ``AutoApprovalDelayInSeconds``; 0: the platform does not approve on its own).
        attention_failures_to_reject: failed attention checks on which the platform's policy lets a
            researcher reject a worker (Prolific: 2); 0: the platform sets no such rule. Help texts cite
            it beside crowdqa's default (``crowd.gold.DEFAULT_ATTENTION_FAILURES``).
        completion_uses_code: :meth:`completion` reads the batch's completion code (Prolific's
            redirect). A platform whose completion never does (the local crowd, MTurk) says False, so a
            submission's thank-you step does not read the batch's platform state for it.
    """

    name: ClassVar[str] = ""
    short_name: ClassVar[str] = ""
    external: ClassVar[bool] = True
    unit_per_hit: ClassVar[bool] = False
    vouches_at_arrival: ClassVar[bool] = True
    publish_retry_safe: ClassVar[bool] = True
    stop_is_final: ClassVar[bool] = False
    returns_on_platform: ClassVar[bool] = False
    min_rejection_chars: ClassVar[int] = 0
    bonus_record_readable: ClassVar[bool] = False
    frame_origins: ClassVar[tuple[str, ...]] = ()
    fees: ClassVar[FeeSchedule] = NO_FEES
    config_keys: ClassVar[tuple[str, ...]] = ()
    provider_path: ClassVar[str] = ""
    rejection_categories: ClassVar[frozenset[str]] = frozenset()
    label: ClassVar[str] = ""
    options: ClassVar[Mapping[str, PlatformOption]] = MappingProxyType({})
    worker_id: ClassVar[Optional[WorkerIdPattern]] = None
    platform_auto_approval_seconds: ClassVar[int] = 0
    attention_failures_to_reject: ClassVar[int] = 0
    completion_uses_code: ClassVar[bool] = True
    do_not_call_in_templates: ClassVar[bool] = True
    """Templates read the traits class's attributes; Django must not instantiate it."""

    @classmethod
    def environment(cls) -> dict[str, Any]:
        """The platform's settings (``config_keys``) as the environment sets them, with their defaults.

        Each platform reads its own variables here, so ``config/settings.py`` names no platform and a new
        platform's settings live in its package. A key left out is unset unless a Django setting sets it.
        """
        return {}

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
    def finished(cls, meta: Mapping[str, Any], assignment_ref: str, completion_code: str) -> Finished:
        """What the completion step needs of a stored assignment: its platform id, the batch's completion
        code, and what the arrival kept in ``meta`` (``Assignment.platform_meta``)."""
        return Finished(assignment_ref=assignment_ref, completion_code=completion_code)

    @classmethod
    def completion(cls, finished: Finished, config: Mapping[str, Any]) -> Optional[Completion]:
        """Where a worker goes once their submission is stored; None: crowdqa thanks them itself."""
        return None

    @classmethod
    def confirm_arrival(cls, arrival: Arrival, config: Mapping[str, Any]) -> Optional[ArrivalRefusal]:
        """Why the platform does not vouch for a new session at arrival; None when it does, or when it
        cannot tell yet (MTurk confirms an assignment only once it is submitted, so crowdqa asks it
        before any money moves instead). Called before a new session is given a place."""
        return None

    @classmethod
    def read_webhook(
        cls, headers: Mapping[str, str], body: bytes, config: Mapping[str, Any]
    ) -> Optional[WebhookEvent]:
        """The verified event of a webhook request; None when the platform sends no webhooks here.

        Raises:
            WebhookError: the request must be refused (bad signature, stale timestamp, bad body).
        """
        return None


PLATFORMS = (
    "crowd.providers.mturk.traits:MTurkTraits",
    "crowd.providers.prolific.traits:ProlificTraits",
    "crowd.providers.local.traits:LocalTraits",
)
"""Each platform's traits class, by import path: the platforms whose workers arrive through URL parameters
(``external``) are recognised in this order. A platform package imports this module, so they load on
first use."""
TEST_PLATFORMS = {"fake": "crowd.providers.fake.provider:FakeProvider"}
"""Test doubles, loaded on first use: they are not platforms a batch is stored with in production."""


def _load(path: str) -> type[PlatformTraits]:
    module, _, attribute = path.partition(":")
    traits = getattr(importlib.import_module(module), attribute)
    if not (isinstance(traits, type) and issubclass(traits, PlatformTraits)):
        raise TypeError(f"{path} is not a PlatformTraits class")
    return traits


@functools.cache
def _platforms() -> dict[str, type[PlatformTraits]]:
    """The stored name of each platform -> its traits, in the order of ``PLATFORMS``."""
    return {traits.name: traits for traits in map(_load, PLATFORMS)}


def platform_traits() -> tuple[type[PlatformTraits], ...]:
    """Every production platform's traits, in the order of ``PLATFORMS``."""
    return tuple(_platforms().values())


def named(traits: Iterable[type[PlatformTraits]], conjunction: str = "or") -> str:
    """The platforms' short names as prose, in the order given ("MTurk", "MTurk or Prolific", "A, B or
    C"; "" for none): help texts and hints name the platforms this way, so a new platform appears in them
    without an edit outside its package."""
    names = [traits_class.short_name for traits_class in traits]
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def worker_id_patterns() -> tuple[WorkerIdPattern, ...]:
    """The worker-id patterns of every production platform that has them, in the order of ``PLATFORMS``."""
    return tuple(traits.worker_id for traits in platform_traits() if traits.worker_id is not None)


def arriving() -> tuple[type[PlatformTraits], ...]:
    """The traits of the platforms whose workers arrive through URL parameters, in the order recognised."""
    return tuple(traits for traits in platform_traits() if traits.external)


def traits_for(name: str) -> type[PlatformTraits]:
    """The traits of the platform stored as ``name`` (``fake``: the test provider's).

    Raises:
        ProviderConfigError: no platform has that name.
    """
    traits = _platforms().get(name)
    if traits is None and name in TEST_PLATFORMS:
        traits = _load(TEST_PLATFORMS[name])
    if traits is None:
        known = ", ".join(sorted(_platforms()))
        raise ProviderConfigError(f"unknown crowd platform {name!r}; known: {known}")
    return traits


def register_platforms() -> None:
    """Tell the data layer (:class:`annotation.platforms.Platform`) each platform's stored name, label and
    own launch settings (``crowd.apps`` at start-up), so model choices and the options schema list them."""
    for traits in platform_traits():
        Platform.register(traits.name, traits.label, dict(traits.options))


def hosted_platforms() -> tuple[str, ...]:
    """The stored names of the platforms crowdqa hosts itself (``external`` False): for queries."""
    return tuple(name for name, traits in _platforms().items() if not traits.external)


def parse_arrival(params: Mapping[str, str], config: Mapping[str, Any] = NO_CONFIG) -> Optional[Arrival]:
    """The platform arrival in query parameters; None when no platform sent one.

    Args:
        params: the query parameters.
        config: the provider settings (``crowd.providers.factory.config_from``): stand-in origins.

    Raises:
        ArrivalError: a platform's parameters are present but incomplete or malformed.
    """
    for traits in arriving():
        arrival = traits.read_arrival(params, config)
        if arrival is not None:
            return arrival
    return None


def completion_for(
    platform: str, finished: Finished, config: Mapping[str, Any] = NO_CONFIG
) -> Optional[Completion]:
    """The completion step of ``platform`` for a stored submission (None: crowdqa thanks the worker)."""
    return traits_for(platform).completion(finished, config)


def accepted_rejection_categories() -> frozenset[str]:
    """Every rejection category some platform takes (a rejection elsewhere keeps it with the reason)."""
    return frozenset().union(*(traits.rejection_categories for traits in platform_traits()))


def framing_origins(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The origins that may show HIT pages in a frame: each arriving platform's sites and stand-ins."""
    origins: list[str] = []
    for traits in arriving():
        origins.extend(traits.frame_origins)
        origins.extend(origin_of(o) for o in traits.stand_in_origins(config) if origin_of(o))
    return tuple(origins)
