"""A batch's life cycle on its platform: what its steps share (its provider, the page workers open, its cost).

Why: each step needs the batch's provider built from the settings, the arrival URL and the cost estimate,
and reports a refusal the same way (``LifecycleError``, shown to the user). The steps live beside this
module: ``launching`` (estimate, draft, launch), ``publishing`` (publish, resume a stopped publish, HITs
added later), ``batch_status`` (pause, resume, cancel, complete) and ``budget`` (spent cost, the cap).
"""

from __future__ import annotations

from django.conf import settings

from annotation.models import Batch
from crowd.providers import errors
from crowd.providers.base import CrowdProvider
from crowd.providers.costs import CostEstimate, estimate_cost, fees_for
from crowd.providers.factory import get_provider


class LifecycleError(Exception):
    """A batch cannot change as asked (over budget, not published, platform refused); shown to the user."""


def provider_for(batch: Batch) -> CrowdProvider:
    """Return the batch's provider built from the Django settings.

    Raises:
        LifecycleError: the provider is not configured (missing token...).
    """
    try:
        return get_provider(batch.provider, settings)
    except errors.ProviderConfigError as exc:
        raise LifecycleError(f"Batch({batch.pk}) provider {batch.provider}: {exc}") from exc


def public_base_url() -> str:
    """``PUBLIC_BASE_URL`` without a trailing slash (where platforms send workers)."""
    return str(getattr(settings, "PUBLIC_BASE_URL", "http://localhost:8000")).rstrip("/")


def arrival_url(batch: Batch) -> str:
    """The page platform workers open: ``{PUBLIC_BASE_URL}/hit/<batch>/`` (Prolific adds its parameters)."""
    return f"{public_base_url()}/hit/{batch.pk}/"


def estimate_for(batch: Batch) -> CostEstimate:
    """The batch's full cost: rewards, expected bonuses (``options["expected_bonus_cents"]``), fees."""
    return estimate_cost(
        batch.reward_cents,
        batch.assignments_per_hit,
        batch.hits.count(),
        fees_for(batch.provider),
        int(batch.options.get("expected_bonus_cents", 0)),
    )


def account_currency(batch: Batch) -> str:
    """The currency the batch's platform account pays in (USD when the platform is not configured).

    Raises:
        LifecycleError: the platform could not be asked.
    """
    try:
        provider = provider_for(batch)
    except LifecycleError:
        return Batch._meta.get_field("currency").default
    try:
        return provider.account_currency()
    except errors.ProviderError as exc:
        raise LifecycleError(f"Batch({batch.pk}) {batch.provider} account currency: {exc}") from exc
