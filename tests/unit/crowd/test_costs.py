"""Tests for crowd/providers/costs.py and the platforms' fee schedules."""

from __future__ import annotations

import pytest

from crowd.providers import costs
from crowd.providers.mturk.traits import MTURK_FEES
from crowd.providers.prolific.traits import PROLIFIC_FEES, prolific_fees


def test_estimate_cost__mturk_20_percent_below_10_assignments() -> None:
    est = costs.estimate_cost(reward_cents=400, assignments_per_unit=3, units=10, fees=MTURK_FEES)
    assert (est.assignments, est.rewards_cents, est.fee_per_assignment_cents) == (30, 12_000, 80)
    assert est.total_cents == 12_000 + 30 * 80


def test_estimate_cost__mturk_extra_20_percent_from_10_assignments() -> None:
    nine = costs.estimate_cost(100, 9, 1, MTURK_FEES)
    ten = costs.estimate_cost(100, 10, 1, MTURK_FEES)
    assert (nine.fee_per_assignment_cents, ten.fee_per_assignment_cents) == (20, 40)


def test_estimate_cost__mturk_minimum_fee_one_cent() -> None:
    assert costs.estimate_cost(2, 1, 1, MTURK_FEES).fee_per_assignment_cents == 1


def test_estimate_cost__bonus_fees_have_no_large_batch_surcharge() -> None:
    est = costs.estimate_cost(100, 10, 1, MTURK_FEES, expected_bonus_cents=50)
    assert est.bonuses_cents == 500 and est.fees_cents == 10 * (40 + 10)


def test_estimate_cost__prolific_rate_is_a_parameter() -> None:
    default = costs.estimate_cost(900, 1, 10, PROLIFIC_FEES)
    assert default.fee_per_assignment_cents == 300
    custom = costs.estimate_cost(900, 1, 10, prolific_fees(rate=0.428, vat_rate=0.2))
    assert custom.fee_per_assignment_cents == 464  # ceil(386 * 1.2): fee ceil(385.2) = 386, then VAT
    assert costs.fees_for("local").commission_rate == 0 and costs.fees_for("prolific") is PROLIFIC_FEES


def test_estimate_cost__negative_input_raises() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        costs.estimate_cost(-1, 1, 1, MTURK_FEES)


def test_check_budget__stops_over_cap() -> None:
    assert costs.check_budget(500, 9_000, 10_000).allowed is True
    over = costs.check_budget(1_500, 9_000, 10_000)
    assert over.allowed is False and over.remaining_cents == -500
    assert costs.check_budget(10**9, 0, None).allowed is True


def test_effective_hourly_pay_cents__undefined_without_time() -> None:
    assert costs.effective_hourly_pay_cents(450, 1800) == 900.0
    assert costs.effective_hourly_pay_cents(450, 0) is None
