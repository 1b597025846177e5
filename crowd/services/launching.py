"""Launching a batch: its cost checked against the budget cap, the draft, the qualification choices, a launch.

Why: a researcher's launch (``launch_batch``, the "New batch" page, the API) either creates a draft whose
cost fits the cap or keeps nothing; running the same launch again resumes the batch it created (found by
``launch_key``) instead of creating a second batch of HITs.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any, Optional

from django.db import transaction

from annotation.hits import handler_for, kinds_where
from annotation.models import Batch
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
from crowd.models import BatchPlatformState
from crowd.providers.base import PublishListener
from crowd.providers.costs import CostEstimate, check_budget, format_money
from crowd.services.lifecycle import LifecycleError, account_currency, estimate_for
from crowd.services.publishing import publish

logger = logging.getLogger(__name__)


class _Rollback(Exception):
    """Internal: undo a dry run's transaction."""


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
