"""Cost of a batch before launch, the budget cap, and effective hourly pay.

Each platform's fee rules are its traits' ``fees`` (``crowd.providers.<platform>.traits``, with the
sources they follow); platforms change them, so they are parameters of the functions here.

All amounts are integer cents; fees are rounded up per assignment, as a platform charges them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class FeeSchedule:
    """A platform's fees.

    Attributes:
        platform: provider name.
        commission_rate: fraction of each reward and bonus (0.20 = 20%).
        large_batch_rate: extra fraction of the reward when a unit has ``large_batch_threshold`` or more
            assignments (MTurk's extra 20%); 0 for none.
        large_batch_threshold: assignments per unit from which ``large_batch_rate`` applies.
        min_fee_cents: minimum commission per assignment.
        vat_rate: tax on the fee (Prolific, where applicable).
    """

    platform: str
    commission_rate: float
    large_batch_rate: float = 0.0
    large_batch_threshold: int = 10
    min_fee_cents: int = 0
    vat_rate: float = 0.0


NO_FEES = FeeSchedule("", commission_rate=0.0)
"""No fees: the local crowd and the fake."""


def fees_for(platform: str) -> FeeSchedule:
    """Return the default schedule of the platform stored as ``platform`` (its traits' ``fees``)."""
    from crowd.providers.traits import traits_for  # the traits build on FeeSchedule

    return traits_for(platform).fees


@dataclass(frozen=True)
class CostEstimate:
    """What a batch will cost.

    Attributes:
        assignments: total assignments (units x assignments per unit).
        rewards_cents: paid to workers as rewards.
        bonuses_cents: expected bonuses paid to workers.
        fees_cents: platform fees (and VAT on them).
        total_cents: everything the requester pays.
        fee_per_assignment_cents: the fee on one reward.
    """

    assignments: int
    rewards_cents: int
    bonuses_cents: int
    fees_cents: int
    total_cents: int
    fee_per_assignment_cents: int

    def to_dict(self) -> dict[str, int]:
        """Return the estimate as a flat dict (for the command's JSON line)."""
        return {
            "assignments": self.assignments,
            "rewards_cents": self.rewards_cents,
            "bonuses_cents": self.bonuses_cents,
            "fees_cents": self.fees_cents,
            "total_cents": self.total_cents,
        }


def reward_fee_cents(reward_cents: int, assignments_per_unit: int, fees: FeeSchedule) -> int:
    """Return the platform fee on one assignment's reward.

    Args:
        reward_cents: the reward per assignment.
        assignments_per_unit: assignments of the HIT (MTurk's 10+ surcharge depends on it).
        fees: the schedule.

    Returns:
        The fee in cents, rounded up.
    """
    rate = fees.commission_rate
    if fees.large_batch_rate and assignments_per_unit >= fees.large_batch_threshold:
        rate += fees.large_batch_rate
    fee = max(fees.min_fee_cents, math.ceil(round(reward_cents * rate, 6)))
    return math.ceil(round(fee * (1 + fees.vat_rate), 6))


def bonus_fee_cents(bonus_cents: int, fees: FeeSchedule) -> int:
    """Return the platform fee on one bonus (no large-batch surcharge)."""
    if bonus_cents <= 0:
        return 0
    fee = max(fees.min_fee_cents, math.ceil(round(bonus_cents * fees.commission_rate, 6)))
    return math.ceil(round(fee * (1 + fees.vat_rate), 6))


def estimate_cost(
    reward_cents: int,
    assignments_per_unit: int,
    units: int,
    fees: FeeSchedule,
    expected_bonus_cents: int = 0,
) -> CostEstimate:
    """Estimate a batch's cost before launch.

    Args:
        reward_cents: reward per assignment.
        assignments_per_unit: assignments per HIT (MTurk) / places per unit (Prolific).
        units: number of HITs.
        fees: the platform's ``FeeSchedule``.
        expected_bonus_cents: expected bonus per assignment (0 if none).

    Returns:
        A ``CostEstimate``.

    Raises:
        ValueError: a negative amount or count.
    """
    if min(reward_cents, assignments_per_unit, units, expected_bonus_cents) < 0:
        raise ValueError(
            f"costs must be non-negative: reward={reward_cents}, assignments={assignments_per_unit}, "
            f"units={units}, bonus={expected_bonus_cents}"
        )
    n = assignments_per_unit * units
    per_fee = reward_fee_cents(reward_cents, assignments_per_unit, fees) if reward_cents else 0
    fees_total = n * (per_fee + bonus_fee_cents(expected_bonus_cents, fees))
    rewards = n * reward_cents
    bonuses = n * expected_bonus_cents
    return CostEstimate(n, rewards, bonuses, fees_total, rewards + bonuses + fees_total, per_fee)


@dataclass(frozen=True)
class BudgetCheck:
    """Whether a planned spend fits the budget.

    Attributes:
        allowed: True when ``spent + planned <= budget`` (always True without a budget).
        budget_cents: the cap (None = no cap).
        spent_cents: already spent (from the ledger).
        planned_cents: what the next action would add.
        remaining_cents: budget left after the action (None without a cap; negative when over).
    """

    allowed: bool
    budget_cents: Optional[int]
    spent_cents: int
    planned_cents: int
    remaining_cents: Optional[int]


def check_budget(planned_cents: int, spent_cents: int, budget_cents: Optional[int]) -> BudgetCheck:
    """Check a planned spend (a launch, more assignments, a bonus) against the batch's budget cap.

    Args:
        planned_cents: the cost of the next action, fees included.
        spent_cents: what the batch already cost, fees included.
        budget_cents: the cap, or None for no cap.

    Returns:
        A ``BudgetCheck``; the caller stops the batch / refuses the action when ``allowed`` is False.
    """
    if budget_cents is None:
        return BudgetCheck(True, None, spent_cents, planned_cents, None)
    remaining = budget_cents - spent_cents - planned_cents
    return BudgetCheck(remaining >= 0, budget_cents, spent_cents, planned_cents, remaining)


def format_money(cents: int, currency: str) -> str:
    """An amount in minor units with its currency code ("0.50 GBP"): how every amount is shown."""
    return f"{cents / 100:.2f} {currency}"


def effective_hourly_pay_cents(paid_cents: int, seconds: float) -> Optional[float]:
    """Return pay per hour in cents for work that took ``seconds`` (median time per HIT is usual).

    Args:
        paid_cents: reward plus bonus for the work.
        seconds: time spent.

    Returns:
        Cents per hour, or None when the time is unknown or zero (undefined, not 0).
    """
    if seconds is None or seconds <= 0:
        return None
    return paid_cents * 3600.0 / seconds
