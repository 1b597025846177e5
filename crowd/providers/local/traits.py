"""What crowdqa knows about the local crowd: crowdqa itself is the platform (no Django here)."""

from __future__ import annotations

from annotation.platforms import Platform
from crowd.providers.costs import NO_FEES
from crowd.providers.traits import PlatformTraits


class LocalTraits(PlatformTraits):
    """The local crowd: crowdqa is the platform (invites, sign-in, the worker home)."""

    name = Platform.LOCAL
    short_name = "local crowd"
    label = "Local crowd"
    external = False
    completion_uses_code = False  # crowdqa thanks the worker itself
    fees = NO_FEES
    provider_path = "crowd.providers.local.provider:LocalProvider"
