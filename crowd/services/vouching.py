"""What a platform vouches for: a local session counts once its platform lists it as that worker's.

Why: MTurk cannot confirm an ``assignmentId`` before it is submitted, so anyone who knows a worker id
can open a HIT under a made-up one (worker.assigning gives each id its own, unconfirmed session). Sync
reads the platform's list of submitted work; a session listed there under the same worker and HIT is
marked ``vouched`` and from then on fills a slot and counts for caps and HIT completion
(``AssignmentQuerySet.vouched``). The review's GetAssignment check does the same before money moves
(``crowd.services.review``).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from annotation.hits import handler_for
from annotation.models import Assignment
from crowd.providers.base import PlatformSubmission
from crowd.providers.traits import traits_for
from crowd.services.gold import recount_confirmed
from crowd.services.review import PLATFORM_CHECK

logger = logging.getLogger(__name__)


def disowned(assignment: Assignment, sub: PlatformSubmission) -> str:
    """Why the platform's record of ``sub`` does not vouch for ``assignment`` ("" when it does)."""
    platform = assignment.hit.batch.provider
    if sub.worker_id != assignment.worker.platform_id:
        return f"{platform} says assignment {sub.platform_assignment_id} belongs to another worker"
    unit = assignment.hit.platform_ref
    if traits_for(platform).unit_per_hit and sub.platform_unit_id and sub.platform_unit_id != unit:
        return f"{platform} says assignment {sub.platform_assignment_id} belongs to another HIT"
    return ""


def confirm_listed(assignment: Assignment, sub: PlatformSubmission, counts: dict[str, Any]) -> bool:
    """Mark ``assignment`` vouched for when the platform lists it as the same worker's on the same HIT.

    Only then does an MTurk session fill a slot and count for the worker's caps and HIT completion.
    A listed id whose worker or HIT differs is noted (``platform_meta["platform_check"]``) and left
    unconfirmed, and its platform status is not followed.

    Returns:
        False when the platform's record does not vouch for the local session.
    """
    problem = disowned(assignment, sub)
    if problem:
        counts["disowned"] += 1
        if assignment.platform_meta.get(PLATFORM_CHECK) != problem:
            Assignment.objects.filter(pk=assignment.pk).update(
                vouched=False, platform_meta={**assignment.platform_meta, PLATFORM_CHECK: problem}
            )
            logger.warning("Assignment(%s): %s", assignment.pk, problem)
        return False
    if assignment.vouched:
        return True
    try:
        flipped = mark_vouched(assignment)
    except IntegrityError:
        counts["conflicts"] += 1
        logger.warning(
            "Assignment(%s): the platform lists a second one of its worker on its HIT", assignment.pk
        )
        return False
    assignment.vouched = True
    counts["confirmed"] += flipped
    return True


def mark_vouched(assignment: Assignment) -> bool:
    """Mark ``assignment`` vouched for and apply what only vouched work does, in one transaction.

    What waited for the platform's word happens now, once (a conditional update, so two syncs that
    confirm the same session at once apply it once): its gold and attention answers count for its
    worker's standing, and its HIT handler applies the rest (:meth:`HitHandler.confirmed`: a SciQ
    question takes its passage).

    Returns:
        True when this call made it vouched (False: it already was).

    Raises:
        IntegrityError: the platform already vouches for another session of this worker on this HIT.
    """
    with transaction.atomic():
        if not Assignment.objects.filter(pk=assignment.pk, vouched=False).update(vouched=True):
            return False
        fresh = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)
        handler_for(fresh.hit.batch.kind).confirmed(fresh)
    recount_confirmed(assignment.pk)  # its gold and attention answers count from now on
    return True
