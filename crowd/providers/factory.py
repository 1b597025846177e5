"""Provider registry: a name and settings-like values in, a ``CrowdProvider`` out.

``mturk``, ``prolific`` and ``fake`` are registered here; the DB-backed ``local`` provider registers itself
(``register_provider("local", LocalProvider.from_config)``) from the Django side, so this package stays
free of Django. An unknown name raises ``ProviderConfigError`` (compare Potato's registry, which logs and
returns ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crowd.providers.base import CrowdProvider
from crowd.providers.errors import ProviderConfigError
from crowd.providers.traits import platform_traits

ProviderFactory = Callable[[Mapping[str, Any]], CrowdProvider]

SHARED_CONFIG_KEYS = ("PUBLIC_BASE_URL",)
"""Settings every provider may read; each platform's own are its traits' ``config_keys``."""


def _mturk(config: Mapping[str, Any]) -> CrowdProvider:
    from crowd.providers.mturk.provider import MTurkProvider

    return MTurkProvider.from_config(config)


def _prolific(config: Mapping[str, Any]) -> CrowdProvider:
    from crowd.providers.prolific.provider import ProlificProvider

    return ProlificProvider.from_config(config)


def _fake(config: Mapping[str, Any]) -> CrowdProvider:
    from crowd.providers.fake.provider import FakeProvider

    return FakeProvider.from_config(config)


# The platform SDKs (boto3/botocore, requests) load when a provider is first built, not when Django
# starts: web workers that only serve HIT pages never pay for them.
_REGISTRY: dict[str, ProviderFactory] = {"mturk": _mturk, "prolific": _prolific, "fake": _fake}


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Register (or replace) the factory for a provider name."""
    _REGISTRY[name] = factory


def provider_names() -> tuple[str, ...]:
    """Return the registered provider names, sorted."""
    return tuple(sorted(_REGISTRY))


def config_keys() -> tuple[str, ...]:
    """Every setting a provider reads: the shared ones and each platform's ``config_keys``."""
    keys = [*SHARED_CONFIG_KEYS]
    for traits in platform_traits():
        keys.extend(k for k in traits.config_keys if k not in keys)
    return tuple(keys)


def config_from(settings: Any) -> dict[str, Any]:
    """Collect the provider settings from a mapping or an object with attributes (Django ``settings``)."""
    keys = config_keys()
    if isinstance(settings, Mapping):
        return {k: settings[k] for k in keys if k in settings}
    return {k: getattr(settings, k) for k in keys if hasattr(settings, k)}


def get_provider(name: str, settings: Any) -> CrowdProvider:
    """Build the provider called ``name``.

    Args:
        name: ``mturk``, ``prolific``, ``fake`` or a registered name (``local``).
        settings: a mapping or an object holding the provider settings (``MTURK_SANDBOX``...).

    Returns:
        A ready provider.

    Raises:
        ProviderConfigError: unknown name or missing configuration (e.g. an empty Prolific token).
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ProviderConfigError(f"unknown crowd provider {name!r}; known: {', '.join(provider_names())}")
    return factory(config_from(settings))
