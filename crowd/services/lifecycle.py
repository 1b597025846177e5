"""A batch's life cycle on its platform: cost estimate, launch, pause / resume / stop, budget cap.

Why: a researcher takes a batch from draft to paid without leaving crowdqa. The order of
every step is chosen so that a crash at any point can be retried: the batch and its HITs are created in
one transaction (rolled back when the estimate exceeds the budget), the platform is called outside any
transaction with the batch id as its idempotency reference (MTurk finds HITs of a crashed attempt by
their RequesterAnnotation), and the platform references are stored in one transaction afterwards
(``crowd.models.BatchPlatformState.published`` keeps the whole ``PublishedBatch`` so later calls can rebuild
it).

HITs added after publication (SciQ stage 2 grows one HIT per approved stage-1 question) reach the
platform through ``publish_pending_hits``, called when such a HIT is created and again by every sync, so
a crash between creating a HIT and publishing it is repaired by the next sync.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any, Optional

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from annotation.hits import handler_for, kinds_where
from annotation.models import HIT, Assignment, Batch, IllegalTransition
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
from crowd.models import BatchPlatformState, Payment
from crowd.providers import errors
from crowd.providers.base import (
    CrowdProvider,
    PublishedBatch,
    PublishedUnit,
    PublishListener,
    PublishRequest,
    PublishUnit,
)
from crowd.providers.costs import (
    CostEstimate,
    bonus_fee_cents,
    check_budget,
    estimate_cost,
    fees_for,
    format_money,
    reward_fee_cents,
)
from crowd.providers.factory import get_provider
from crowd.providers.traits import traits_for

logger = logging.getLogger(__name__)

ACTIONS = ("publish", "pause", "resume", "cancel", "complete")
NEEDS_ATTENTION = "needs_attention"
"""Sync's count naming a batch the platform no longer knows (its HITs or study are gone): the reason is
kept in ``BatchPlatformState.attention_reason``."""


class LifecycleError(Exception):
    """A batch cannot change as asked (over budget, not published, platform refused); shown to the user."""


class _Rollback(Exception):
    """Internal: undo a dry run's transaction."""


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


def _create_checked(spec: BatchSpec, created_by: Any) -> tuple[Batch, CostEstimate]:
    """Create the draft batch and refuse it (rolled back by the caller's atomic) when over budget."""
    batch = create_batch(spec, created_by=created_by)
    batch.currency = account_currency(batch)
    batch.save(update_fields=["currency"])
    estimate = estimate_for(batch)
    budget = check_budget(estimate.total_cents, 0, batch.budget_cap_cents)
    if not budget.allowed:
        money = batch.currency
        raise LifecycleError(
            f"the estimated cost {format_money(estimate.total_cents, money)} ({estimate.assignments} "
            f"assignments, fees {format_money(estimate.fees_cents, money)}) exceeds the budget cap "
            f"{format_money(batch.budget_cap_cents or 0, money)}; lower --limit/--assignments/--reward or "
            "raise --budget"
        )
    return batch, estimate


def dry_run(spec: BatchSpec) -> tuple[int, CostEstimate, str]:
    """Return the HIT count, cost estimate and its currency of ``spec`` without keeping anything.

    Raises:
        LifecycleError: over budget. BatchSpecError: bad spec.
    """
    result: dict[str, Any] = {}
    try:
        with transaction.atomic():
            batch, estimate = _create_checked(spec, None)
            result.update(hits=batch.hits.count(), estimate=estimate, currency=batch.currency)
            raise _Rollback
    except _Rollback:
        pass
    return result["hits"], result["estimate"], result["currency"]


def qualification_options(
    provider: str, require_qualification: Optional[int] = None, exclude_batches: Sequence[int] = ()
) -> dict[str, Any]:
    """The ``Batch.options`` that let in only workers screened by one batch and keep out those of others.

    Args:
        provider: the new batch's platform (platform qualifications apply on that platform only).
        require_qualification: a screening batch whose approved workers alone may work.
        exclude_batches: batches whose workers may not work (their screening qualification on the
            platform).

    Raises:
        QualificationChoiceError: no such screening batch / batch (``field`` names which choice).
    """
    options: dict[str, Any] = {}
    if require_qualification is not None and require_qualification in exclude_batches:
        pk = require_qualification
        raise QualificationChoiceError(
            "exclude_batch",
            f"requiring and excluding Batch({pk}) contradict each other: the first admits only workers "
            f"who passed Batch({pk}), the second keeps exactly them out",
            contradiction=pk,
        )
    if require_qualification is not None:
        screening = Batch.objects.filter(
            pk=require_qualification, kind__in=kinds_where(lambda h: h.qualifies_workers)
        ).first()
        if screening is None:
            raise QualificationChoiceError(
                "require_qualification", f"no screening Batch({require_qualification})"
            )
        options["required_qualification"] = screening.options.get(
            "grants_qualification", f"screened-{screening.pk}"
        )
        granted = BatchPlatformState.of(screening.pk).screening_qualification
        if granted and screening.provider == provider:
            options["require_qualification_ids"] = [granted]
    excluded = []
    for pk in exclude_batches:
        other = Batch.objects.filter(pk=pk).first()
        if other is None:
            raise QualificationChoiceError("exclude_batch", f"no Batch({pk})")
        granted = BatchPlatformState.of(other.pk).screening_qualification
        if granted and other.provider == provider:
            excluded.append(granted)
    if excluded:
        options["exclude_qualification_ids"] = excluded
    return options


class QualificationChoiceError(BatchSpecError):
    """A qualification choice names no usable batch; ``field`` is the choice's name."""

    def __init__(self, field: str, message: str, contradiction: Optional[int] = None) -> None:
        super().__init__(message)
        self.field = field
        self.contradiction = contradiction


def create_draft(spec: BatchSpec, created_by: Any = None) -> tuple[Batch, CostEstimate]:
    """Create a draft batch with its HITs after checking its cost against the budget cap.

    The draft is published later (``change_status(batch, "publish")``), from the batch page or by
    :func:`launch`.

    Raises:
        LifecycleError: over budget (nothing is kept). BatchSpecError: bad spec.
    """
    with transaction.atomic():
        batch, estimate = _create_checked(spec, created_by)
        if handler_for(batch.kind).qualifies_workers:
            options = dict(batch.options)
            options.setdefault("grants_qualification", f"screened-{batch.pk}")
            batch.options = options
            batch.save(update_fields=["options"])
    return batch, estimate


def launch_key(spec: BatchSpec) -> str:
    """A fingerprint of what a launch asks for: the same command run again gives the same key."""
    data = json.dumps(asdict(spec), sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:32]


def unfinished_launch(spec: BatchSpec) -> Optional[Batch]:
    """The draft batch an identical earlier launch created and did not finish publishing, if any."""
    return (
        Batch.objects.filter(status=Batch.Status.DRAFT, options__launch_key=launch_key(spec))
        .order_by("pk")
        .first()
    )


def launch(
    spec: BatchSpec, created_by: Any = None, listener: Optional[PublishListener] = None
) -> tuple[Batch, CostEstimate]:
    """Create a batch, check its cost against the budget cap, and publish it on its platform.

    The ``launch_batch`` command and the "New batch" page both come here (or to :func:`create_draft`).
    Running the same launch again after it failed or was killed resumes the batch it created (found by
    ``launch_key``) instead of creating a second batch of HITs for the same request.

    Args:
        spec: what to create (kind, corpus, provider, reward, budget...).
        created_by: the researcher.
        listener: told of the publish's progress (the command's progress bar).

    Returns:
        The published batch and its cost estimate.

    Raises:
        LifecycleError: over budget (nothing is kept) or the platform refused (the draft batch is kept and
            running the same launch again, ``publish`` or ``sync_batches`` resumes it).
        BatchSpecError: bad spec (unknown corpus, nothing to annotate).
    """
    batch = unfinished_launch(spec)
    if batch is not None:
        logger.warning("Batch(%s): resuming the unfinished publish of an identical launch", batch.pk)
        estimate = estimate_for(batch)
    else:
        batch, estimate = create_draft(
            replace(spec, options={**spec.options, "launch_key": launch_key(spec)}), created_by
        )
    publish(batch, listener)
    return batch, estimate


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
    ``exclude_qualification_ids`` (platform ids), ``completion_code``, ``prolific_filters``.

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
        extra={"prolific_filters": options.get("prolific_filters", [])},
    )


class _Recorder(PublishListener):
    """Keeps the platform batch an attempt created (before any further call) and counts its units."""

    def __init__(self, batch: Batch, listener: Optional[PublishListener]) -> None:
        self.batch = batch
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
    recorder = _Recorder(batch, listener)
    try:
        published = provider.publish(request, recorder)
    except errors.ProviderError as exc:
        total = len(request.effective_units())
        raise LifecycleError(
            f"Batch({batch.pk}) could not be published on {provider.name}: {exc}. "
            f"{recorder.units} of {total} HIT(s) are on {provider.short_name}; {resume_advice(batch)}"
        ) from exc
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        BatchPlatformState.change(
            locked.pk, publish_started=None, publish_ref="", published=asdict(published)
        )
        options = dict(locked.options)
        if published.completion_code:
            options["completion_code"] = published.completion_code
        locked.options = options
        locked.platform_ref = published.platform_batch_id
        locked.save(update_fields=["options", "platform_ref"])
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


def _set_options(batch: Batch, **values: Any) -> None:
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        locked.options = {**locked.options, **values}
        locked.save(update_fields=["options"])
    batch.options = locked.options


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
    except errors.ProviderError as exc:
        batch.refresh_from_db()
        raise LifecycleError(f"Batch({batch.pk}) {action} on {batch.provider}: {exc}") from exc
    logger.info("Batch(%s) %s -> %s", batch.pk, action, batch.status)


def spent_cents(batch: Batch) -> dict[str, int]:
    """What the batch cost so far and has committed, fees included (from the ledger and live work).

    Returns:
        ``rewards``, ``bonuses``, ``fees`` (on both), ``committed`` (accepted or submitted work not yet
        paid, with its fee) and ``total``.
    """
    fees = fees_for(batch.provider)
    paid = batch.payments.exclude(status=Payment.Status.FAILED)
    rewards = paid.filter(kind=Payment.Kind.REWARD).aggregate(n=Sum("amount_cents"))["n"] or 0
    reward_count = paid.filter(kind=Payment.Kind.REWARD).count()
    bonus_amounts = list(paid.filter(kind=Payment.Kind.BONUS).values_list("amount_cents", flat=True))
    bonuses = sum(bonus_amounts)
    per_fee = (
        reward_fee_cents(batch.reward_cents, batch.assignments_per_hit, fees) if batch.reward_cents else 0
    )
    bonus_fee = sum(bonus_fee_cents(amount, fees) for amount in bonus_amounts)
    open_work = Assignment.objects.filter(
        hit__batch=batch, status__in=[Assignment.Status.ACCEPTED, Assignment.Status.SUBMITTED]
    ).count()
    committed = open_work * (batch.reward_cents + per_fee)
    fee_total = reward_count * per_fee + bonus_fee
    return {
        "rewards": rewards,
        "bonuses": bonuses,
        "fees": fee_total,
        "committed": committed,
        "total": rewards + bonuses + fee_total + committed,
    }


def budget_allows_one_more(batch: Batch) -> bool:
    """True when one more assignment (reward and fee) fits under the batch's budget cap (or there is none).

    The local crowd checks this before handing out a HIT; sync stops platform batches with it.
    """
    if batch.budget_cap_cents is None:
        return True
    fees = fees_for(batch.provider)
    next_cost = batch.reward_cents + (
        reward_fee_cents(batch.reward_cents, batch.assignments_per_hit, fees) if batch.reward_cents else 0
    )
    return check_budget(next_cost, spent_cents(batch)["total"], batch.budget_cap_cents).allowed


def enforce_budget(batch: Batch) -> bool:
    """Stop a published batch once its spent + committed cost leaves no room for one more assignment.

    Returns:
        True when the batch was stopped now.
    """
    batch.refresh_from_db()
    if batch.budget_cap_cents is None or batch.status != Batch.Status.PUBLISHED:
        return False
    if budget_allows_one_more(batch):
        return False
    logger.warning(
        "Batch(%s) reached its budget cap of %d cents: stopping it", batch.pk, batch.budget_cap_cents
    )
    published = published_of(batch)
    if published is not None:
        provider_for(batch).stop(published)
    _set_options(batch, budget_stopped=timezone.now().isoformat())
    if traits_for(batch.provider).stop_is_final:
        BatchPlatformState.change(batch.pk, stopped_for_good=True)
    batch.pause()
    return True
