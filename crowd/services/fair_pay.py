"""A floor wage per batch: approved work is topped up to it, by the hour of active time.

Why: a reward per HIT that looked fair at launch can pay less than the researcher meant when HITs take
longer than expected. With ``Batch.options["floor_wage_cents_per_hour"]`` set, approving a submission
whose active time the HIT page measured (:mod:`annotation.active_time`) pays the difference between the
floor for that time and the reward as a bonus, through the payment ledger, once per assignment (its
idempotency key is ``floor-top-up-<assignment>``): approving again or retrying pays nothing more.
Wall time (accept to submit) is never used: a tab left open would be paid as work.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Optional

from annotation.models import Assignment

logger = logging.getLogger(__name__)

FLOOR_OPTION = "floor_wage_cents_per_hour"


def top_up_cents(reward_cents: int, active_seconds: Optional[float], floor_cents_per_hour: int) -> int:
    """Cents that bring ``reward_cents`` for ``active_seconds`` of work up to the floor (0 when it is met
    or the time is unknown); rounded up, so the worker is never paid a fraction of a cent below it."""
    if not active_seconds or active_seconds <= 0 or floor_cents_per_hour <= 0:
        return 0
    owed = floor_cents_per_hour * active_seconds / 3600.0
    return max(0, math.ceil(owed - reward_cents - 1e-9))


def top_up_key(assignment: Assignment) -> str:
    return f"floor-top-up-{assignment.pk}"


def top_up_to_floor(assignment: Assignment) -> Optional[Any]:
    """Pay an approved assignment's top-up to its batch's floor wage, if one is owed.

    Returns:
        The ledger's ``PaymentResult``, or None when no floor is set, no active time was measured, the
        reward already meets the floor, or the assignment is not approved.

    Raises:
        crowd.services.review.ReviewError: the platform or the budget refused the bonus.
    """
    from crowd.services.review import bonus

    batch = assignment.hit.batch
    floor = int(batch.options.get(FLOOR_OPTION) or 0)
    if not floor or assignment.status != Assignment.Status.APPROVED:
        return None
    cents = top_up_cents(batch.reward_cents, assignment.active_seconds, floor)
    if cents <= 0:
        return None
    minutes = (assignment.active_seconds or 0) / 60
    reason = (
        f"Top-up to this study's minimum pay of {floor / 100:.2f} {batch.currency} per hour for "
        f"{minutes:.0f} minutes of work"
    )
    result = bonus(assignment, cents, reason, key=top_up_key(assignment))
    logger.info("Assignment(%s) topped up by %d cents to the floor wage", assignment.pk, cents)
    return result
