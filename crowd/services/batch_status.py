"""Pausing, resuming, stopping and completing a published batch: on the platform first, then locally.

Why: a local status that the platform does not share would send workers to a batch that refuses them
(or keep paying for one that was stopped), so the platform is told first and the local status follows
only when it agreed.
"""

from __future__ import annotations

import logging

from annotation.models import Batch, IllegalTransition
from crowd.models import BatchPlatformState
from crowd.providers import errors
from crowd.providers.traits import traits_for
from crowd.services import events
from crowd.services.lifecycle import LifecycleError, provider_for
from crowd.services.publishing import publish, published_of

logger = logging.getLogger(__name__)


ACTIONS = ("publish", "pause", "resume", "cancel", "complete")


def _check(batch: Batch, target: str) -> None:
    """Raise ``IllegalTransition`` before the platform is told anything."""
    if target not in Batch.TRANSITIONS[batch.status]:
        raise IllegalTransition(batch, batch.status, target)


def change_status(batch: Batch, action: str) -> None:
    """Publish, pause, resume, cancel or complete a batch, on the platform first, then locally.

    Args:
        batch: the batch (updated in place).
        action: one of ``publish``, ``pause``, ``resume``, ``cancel``, ``complete``.

    Raises:
        LifecycleError: unknown action, the platform refused, or an MTurk batch cannot be resumed.
        IllegalTransition: the batch's status does not allow the action.
    """
    if action not in ACTIONS:
        raise LifecycleError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if action == "publish":
        publish(batch)
        return
    published = published_of(batch)
    provider = provider_for(batch) if published is not None else None
    try:
        if action == "pause":
            _check(batch, Batch.Status.PAUSED)
            if provider is not None:
                provider.pause(published)
                if provider.stop_is_final:
                    BatchPlatformState.change(batch.pk, stopped_for_good=True)
            batch.pause()
        elif action == "resume":
            if BatchPlatformState.of(batch.pk).stopped_for_good:
                platform = traits_for(batch.provider).short_name
                raise LifecycleError(
                    f"Batch({batch.pk}): its {platform} units were expired when it was paused and cannot be "
                    "listed again; launch a new batch for the remaining work"
                )
            _check(batch, Batch.Status.PUBLISHED)
            if provider is not None:
                provider.resume(published)
            batch.publish()
        else:
            _check(batch, Batch.Status.CANCELLED if action == "cancel" else Batch.Status.COMPLETED)
            if provider is not None:
                provider.stop(published)
            if action == "cancel":
                batch.cancel()
            else:
                batch.complete()
                events.batch_completed_if_done(batch.pk)
    except errors.ProviderError as exc:
        batch.refresh_from_db()
        raise LifecycleError(f"Batch({batch.pk}) {action} on {batch.provider}: {exc}") from exc
    logger.info("Batch(%s) %s -> %s", batch.pk, action, batch.status)
