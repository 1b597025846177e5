"""A batch's spending against its budget cap: what it cost and committed, and the stop at the cap.

Why: the cap is a promise to the researcher, so the local crowd checks it before handing out a HIT
and every sync stops a platform batch that has no room for one more assignment.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from annotation.models import Assignment, Batch
from crowd.models import BatchPlatformState, Payment
from crowd.providers.costs import bonus_fee_cents, check_budget, fees_for, reward_fee_cents
from crowd.providers.traits import traits_for
from crowd.services import events
from crowd.services.lifecycle import provider_for
from crowd.services.publishing import published_of

logger = logging.getLogger(__name__)


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
    stopped: dict[str, Any] = {"budget_stopped_at": timezone.now()}
    if traits_for(batch.provider).stop_is_final:
        stopped["stopped_for_good"] = True
    BatchPlatformState.change(batch.pk, **stopped)
    batch.pause()
    events.budget_reached(batch, spent_cents(batch)["total"])
    return True
