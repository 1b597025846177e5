"""Provider registry: a name and settings-like values in, a ``CrowdProvider`` out.

Each platform's traits name its provider class (``provider_path``), imported when a provider is first
built: the platform SDKs (boto3/botocore, requests) and the DB-backed local provider load then, not when
Django starts, so web workers that only serve HIT pages never pay for them. ``register_provider`` adds
or replaces a factory (tests). An unknown name raises ``ProviderConfigError`` (compare Potato's registry,
which logs and returns ``None``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed

from crowd.providers.base import CrowdProvider
from crowd.providers.errors import ProviderConfigError
from crowd.providers.traits import TEST_PLATFORMS, platform_traits, traits_for

ProviderFactory = Callable[[Mapping[str, Any]], CrowdProvider]

SHARED_CONFIG_KEYS = ("PUBLIC_BASE_URL",)
"""Settings every provider may read; each platform's own are its traits' ``config_keys``."""


_REGISTRY: dict[str, ProviderFactory] = {}
"""Factories registered with ``register_provider``; they take precedence over the traits' providers."""


def register_provider(name: str, factory: ProviderFactory) -> None:
    """Register (or replace) the factory for a provider name."""
    _REGISTRY[name] = factory


def provider_names() -> tuple[str, ...]:
    """Return the names a provider can be built for, sorted."""
    built = {traits.name for traits in platform_traits() if traits.provider_path}
    return tuple(sorted({*_REGISTRY, *built, *TEST_PLATFORMS}))


def _factory(name: str) -> ProviderFactory:
    """The registered factory for ``name``, else the ``from_config`` of its traits' provider class."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    try:
        path = traits_for(name).provider_path
    except ProviderConfigError:
        path = ""
    if not path:
        raise ProviderConfigError(f"unknown crowd provider {name!r}; known: {', '.join(provider_names())}")
    module, _, attribute = path.partition(":")
    provider: Any = getattr(importlib.import_module(module), attribute)  # each provider's from_config
    return provider.from_config


def config_keys() -> tuple[str, ...]:
    """Every setting a provider reads: the shared ones and each platform's ``config_keys``."""
    keys = [*SHARED_CONFIG_KEYS]
    for traits in platform_traits():
        keys.extend(k for k in traits.config_keys if k not in keys)
    return tuple(keys)


def config_from(settings: Any) -> dict[str, Any]:
    """Collect the provider settings from a mapping, or from Django ``settings`` and the environment.

    A mapping is taken as it is (the keys it lacks are unset). From an object with attributes (Django
    ``settings``), an attribute of a setting's name wins; otherwise a platform's setting comes from its
    traits' ``environment()``, which reads the environment variables its package documents.
    """
    if isinstance(settings, Mapping):
        keys = config_keys()
        return {k: settings[k] for k in keys if k in settings}
    # Django's settings are read once per process (every HIT page and submission asks, and a setting a
    # project does not define costs an AttributeError each time); override_settings empties the copy.
    config = dict(_django_settings()) if settings is django_settings else _settings_of(settings)
    for traits in platform_traits():
        environment = traits.environment()
        for key in traits.config_keys:
            if key not in config and key in environment:
                config[key] = environment[key]
    return config


def _settings_of(settings: Any) -> dict[str, Any]:
    """The provider settings an object with attributes defines (the environment not consulted)."""
    return {k: getattr(settings, k) for k in config_keys() if hasattr(settings, k)}


@lru_cache(maxsize=1)
def _django_settings() -> dict[str, Any]:
    return _settings_of(django_settings)


setting_changed.connect(lambda **kwargs: _django_settings.cache_clear(), weak=False, dispatch_uid=__name__)


def get_provider(name: str, settings: Any) -> CrowdProvider:
    """Build the provider called ``name``.

    Args:
        name: a platform's stored name (``Batch.provider``), ``fake``, or a registered name.
        settings: a mapping or an object holding the provider settings (``MTURK_SANDBOX``...).

    Returns:
        A ready provider.

    Raises:
        ProviderConfigError: unknown name or missing configuration (e.g. an empty Prolific token).
    """
    return _factory(name)(config_from(settings))
