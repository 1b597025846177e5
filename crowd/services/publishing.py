"""Publishing a batch on its platform, resuming a publish that stopped, and HITs added after publication.

Why: the order of every step is chosen so that a crash at any point can be retried: the platform is
called outside any transaction with the batch id as its idempotency reference (MTurk finds HITs of a
crashed attempt by their RequesterAnnotation), and the platform references are stored in one transaction
afterwards (``crowd.models.BatchPlatformState.published`` keeps the whole ``PublishedBatch`` so later
calls can rebuild it).

HITs added after publication (SciQ stage 2 grows one HIT per approved stage-1 question) reach the
platform through ``publish_pending_hits``, called when such a HIT is created and again by every sync, so
a crash between creating a HIT and publishing it is repaired by the next sync.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import asdict, replace
from typing import Any, Optional

from django.db import transaction
from django.utils import timezone

from annotation.hits import handler_for
from annotation.models import HIT, Batch
from crowd.models import BatchPlatformState
from crowd.providers import errors
from crowd.providers.base import (
    CrowdProvider,
    PublishedBatch,
    PublishedUnit,
    PublishListener,
    PublishRequest,
    PublishUnit,
)
from crowd.providers.traits import traits_for
from crowd.services.batch_jobs import Tracker, batch_job
from crowd.services.lifecycle import LifecycleError, arrival_url, provider_for

logger = logging.getLogger(__name__)


def published_of(batch: Batch) -> Optional[PublishedBatch]:
    """Rebuild the stored ``PublishedBatch`` of a batch (None before it was published).

    A local batch needs no platform references, so one opened without ``publish`` (the demo, stage-2
    batches created on approval) gets them derived from its ids.
    """
    data = BatchPlatformState.of(batch.pk).published
    if not data and not traits_for(batch.provider).external and batch.status != Batch.Status.DRAFT:
        return PublishedBatch(
            provider=batch.provider, batch_ref=str(batch.pk), platform_batch_id=str(batch.pk), units=()
        )
    if not data:
        return None
    return PublishedBatch(
        provider=data["provider"],
        batch_ref=data["batch_ref"],
        platform_batch_id=data["platform_batch_id"],
        units=tuple(PublishedUnit(u["local_ref"], u["platform_id"]) for u in data["units"]),
        sandbox=bool(data.get("sandbox", True)),
        completion_code=data.get("completion_code", ""),
        preview_url=data.get("preview_url", ""),
    )


def publish_request(batch: Batch, provider: CrowdProvider) -> PublishRequest:
    """Translate a batch and its options into the platform-neutral ``PublishRequest``.

    Options read: ``locales``, ``min_approval_rate``, ``min_approved``, ``require_qualification_ids`` /
    ``exclude_qualification_ids`` (platform ids), ``completion_code``, and the platform's own
    ``options`` (its traits), passed as ``extra``.
        **auto_approval(options),

    Raises:
        LifecycleError: a qualification is both required and excluded.
    """
    options = batch.options
    both = set(options.get("require_qualification_ids", ())) & set(
        options.get("exclude_qualification_ids", ())
    )
    if both:
        raise LifecycleError(
            f"Batch({batch.pk}) both requires and excludes qualification(s) {', '.join(sorted(both))}: "
            "no worker could take it"
        )
    units = tuple(
        PublishUnit(local_ref=str(pk)) for pk in batch.hits.order_by("position").values_list("pk", flat=True)
    )
    return PublishRequest(
        batch_ref=str(batch.pk),
        title=batch.title or batch.name,
        description=batch.description or batch.title or batch.name,
        external_url=arrival_url(batch),
        reward_cents=batch.reward_cents,
        assignments=batch.assignments_per_hit,
        duration_seconds=max(60, batch.time_limit_minutes * 60),
        keywords=tuple(options.get("keywords", ("question answering", "writing"))),
        units=units,
        locales=tuple(options.get("locales", ())),
        min_approval_rate=options.get("min_approval_rate"),
        min_approved=options.get("min_approved"),
        require_qualifications=tuple(options.get("require_qualification_ids", ())),
        exclude_qualifications=tuple(options.get("exclude_qualification_ids", ())),
        completion_code=str(options.get("completion_code", "")),
        extra={key: options[key] for key in traits_for(batch.provider).options if key in options},
        **auto_approval(options),
    )


def auto_approval(options: dict[str, Any]) -> dict[str, int]:
    """The platform's auto-approval delay for a batch's ``auto_approve_seconds``, when it sets one.

    MTurk approves unreviewed work on its own after ``AutoApprovalDelayInSeconds``; a batch with its own
    delay gets the same there, so the platform and crowdqa's periodic approval
    (:mod:`crowd.services.auto_approval`) agree. Without one, the platform's default stands.
    """
    seconds = options.get("auto_approve_seconds")
    return {} if seconds is None else {"auto_approve_seconds": int(seconds)}


class _Recorder(PublishListener):
    """Keeps the platform batch an attempt created (before any further call) and counts its units."""

    def __init__(
        self, batch: Batch, listener: Optional[PublishListener], tracker: Optional[Tracker] = None
    ) -> None:
        self.batch = batch
        self.tracker = tracker
        self.listener = listener or PublishListener()
        self.units = 0
        self.adopted = 0

    def platform_batch(self, platform_batch_id: str, completion_code: str = "") -> None:
        if BatchPlatformState.of(self.batch.pk).publish_ref != platform_batch_id:
            BatchPlatformState.change(self.batch.pk, publish_ref=platform_batch_id)
        self.listener.platform_batch(platform_batch_id, completion_code)

    def unit(self, unit: PublishedUnit, adopted: bool) -> None:
        self.units += 1
        self.adopted += int(adopted)
        if self.tracker is not None:
            self.tracker.report(self.units)
        self.listener.unit(unit, adopted)


def resume_advice(batch: Batch) -> str:
    """What to run to finish a publish that stopped: each way adopts what reached the platform."""
    return (
        f"nothing is lost and nothing will be made twice: run the same launch_batch command again, press "
        f"Publish on the batch page, or run `manage.py sync_batches --batch {batch.pk} --sync` to finish "
        "publishing it (what reached the platform is adopted)"
    )


def publish(batch: Batch, listener: Optional[PublishListener] = None) -> PublishedBatch:
    """Publish a draft batch on its platform and store the references; a retry publishes nothing twice.

    A batch whose platform state holds ``published`` is only moved to published. An attempt that
    failed or was killed leaves ``publish_started`` (and ``publish_ref``, the HIT type or study it
    created, recorded before any further call) in the state; the next attempt resumes it: the provider
    adopts the HITs or the study already on the platform (by RequesterAnnotation, study id or internal
    name) instead of creating them again.

    Raises:
        LifecycleError: the batch is not a draft, or the platform refused (the message says how to resume).
    """
    batch.refresh_from_db()
    existing = published_of(batch)
    if existing is not None:
        if batch.status == Batch.Status.DRAFT:
            batch.publish()
        return existing
    if batch.status != Batch.Status.DRAFT:
        raise LifecycleError(f"Batch({batch.pk}) is {batch.status}; only a draft can be published")
    provider = provider_for(batch)
    state = BatchPlatformState.of(batch.pk)
    resume = state.publish_started is not None
    publish_request(batch, provider)  # refuses a contradictory batch before anything is started
    if not resume:  # from here on a stop leaves a publish to resume (sync_batches finds it)
        BatchPlatformState.change(batch.pk, publish_started=timezone.now())
    if handler_for(batch.kind).qualifies_workers and provider.external and not state.screening_qualification:
        try:
            qualification = provider.create_qualification(
                f"crowdqa-screened-{batch.pk}", f"Passed the crowdqa screening batch {batch.pk}"
            )
        except errors.ProviderError as exc:
            raise LifecycleError(
                f"Batch({batch.pk}): the screening qualification could not be created on {provider.name}: "
                f"{exc}; no HIT is on {provider.short_name} yet; {resume_advice(batch)}"
            ) from exc
        BatchPlatformState.change(batch.pk, screening_qualification=qualification)
    request = replace(
        publish_request(batch, provider),
        resume=resume,
        platform_batch_id=state.publish_ref,
    )
    total = len(request.effective_units())
    tracking = batch_job(batch.pk, "publish", "HITs", total) if provider.external else nullcontext(None)
    with tracking as tracker:
        recorder = _Recorder(batch, listener, tracker)
        try:
            published = provider.publish(request, recorder)
        except errors.ProviderError as exc:
            raise LifecycleError(
                f"Batch({batch.pk}) could not be published on {provider.name}: {exc}. "
                f"{recorder.units} of {total} HIT(s) are on {provider.short_name}; {resume_advice(batch)}"
            ) from exc
        if tracker is not None:
            tracker.report(total, total)
            tracker.result = {"units": recorder.units, "adopted": recorder.adopted}
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        BatchPlatformState.change(
            locked.pk, publish_started=None, publish_ref="", published=asdict(published)
        )
        locked.platform_ref = published.platform_batch_id
        locked.save(update_fields=["platform_ref"])
        for unit in published.units:
            HIT.objects.filter(batch=locked, pk=int(unit.local_ref)).update(platform_ref=unit.platform_id)
        if locked.status == Batch.Status.DRAFT:  # a concurrent caller may have finished first
            locked.publish()
    batch.refresh_from_db()
    logger.info(
        "Batch(%s) published on %s as %s (%d unit(s) adopted from an earlier attempt)",
        batch.pk,
        provider.name,
        published.platform_batch_id,
        recorder.adopted,
    )
    return published


PARENT_LIVE = (Batch.Status.PUBLISHED, Batch.Status.PAUSED, Batch.Status.COMPLETED)
"""Statuses of a stage-1 batch whose stage-2 child follows it onto the platform."""


def follows_parent(batch: Batch) -> bool:
    """True for a draft platform batch that must be published because its stage-1 parent was.

    SciQ stage-2 batches are created on the first approval of stage-1 work; on MTurk or Prolific they
    start as drafts and go on the platform with their first HIT.
    """
    parent = batch.parent
    return (
        batch.status == Batch.Status.DRAFT
        and traits_for(batch.provider).external
        and parent is not None
        and parent.provider == batch.provider
        and parent.status in PARENT_LIVE
        and published_of(parent) is not None
    )


def publish_pending_hits(batch: Batch) -> dict[str, Any]:
    """Put the batch's HITs that the platform does not know yet on it; a retry publishes nothing twice.

    A published MTurk batch gets one HIT per new local HIT, with the batch's HIT type; a Prolific study
    gets the places of the new HITs. A draft stage-2 batch whose stage-1 parent is on the platform is
    published as a whole (``publish``). Local batches and batches not published (or paused: their HITs
    go on the platform when a sync finds them published again) are left alone.

    Args:
        batch: the batch (refreshed from the database).

    Returns:
        ``batch`` (id), ``published`` (HITs put on the platform now) and ``batch_published`` (True when
        the whole batch was published now).

    Raises:
        LifecycleError: the platform refused; the HITs stay pending and the next call retries them.
    """
    batch.refresh_from_db()
    result: dict[str, Any] = {"batch": batch.pk, "published": 0, "batch_published": False}
    if not traits_for(batch.provider).external:
        return result
    if follows_parent(batch):
        if batch.hits.exists():
            published = publish(batch)
            result.update(published=len(published.units), batch_published=True)
        return result
    published = published_of(batch)
    if batch.status != Batch.Status.PUBLISHED or published is None:
        return result
    known = {u.local_ref: u.platform_id for u in published.units}
    missing = list(batch.hits.filter(platform_ref="").order_by("position", "pk"))
    _repair_refs(batch, [h for h in missing if str(h.pk) in known], known)
    pending = [h for h in missing if str(h.pk) not in known]
    if not pending:
        return result
    provider = provider_for(batch)
    units = tuple(PublishUnit(local_ref=str(h.pk)) for h in pending)
    try:
        added = provider.add_units(published, publish_request(batch, provider), units)
    except errors.ProviderError as exc:
        raise LifecycleError(
            f"Batch({batch.pk}): {len(units)} new HIT(s) could not be published on {provider.name}: {exc}"
        ) from exc
    _store_units(batch, added)
    result["published"] = len(added)
    logger.info("Batch(%s): %d new HIT(s) published on %s", batch.pk, len(added), provider.name)
    return result


def _repair_refs(batch: Batch, hits: list[HIT], known: dict[str, str]) -> None:
    """Copy the platform id of units the batch already lists onto HITs that lack it."""
    for hit in hits:
        HIT.objects.filter(pk=hit.pk, batch=batch, platform_ref="").update(platform_ref=known[str(hit.pk)])


def _store_units(batch: Batch, units: tuple[PublishedUnit, ...]) -> None:
    """Append new units to the stored ``published`` and their HITs' ``platform_ref``, in one transaction."""
    with transaction.atomic():
        locked = Batch.objects.select_for_update(of=("self",)).get(pk=batch.pk)
        state = BatchPlatformState.objects.select_for_update().get(batch_id=locked.pk)
        stored = dict(state.published or {})
        listed = {u["local_ref"] for u in stored["units"]}
        stored["units"] = list(stored["units"]) + [asdict(u) for u in units if u.local_ref not in listed]
        state.published = stored
        state.save(update_fields=["published"])
        for unit in units:
            HIT.objects.filter(batch=locked, pk=int(unit.local_ref)).update(platform_ref=unit.platform_id)
    batch.refresh_from_db()
