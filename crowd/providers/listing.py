"""What a provider reports when sync reads a batch: resumable steps of its submissions and their differences.

Kept apart from :mod:`crowd.providers.base` (which re-exports both) so the interface module stays short.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from crowd.providers.base import PlatformSubmission


@dataclass(frozen=True)
class SubmissionPage:
    """One step of a resumable listing of a batch's submissions (``CrowdProvider.submission_pages``).

    Attributes:
        submissions: what this step lists.
        units: the platform units (MTurk HITs) whose every submission this step lists, so work of these
            units absent from ``submissions`` is missing; None when the step is a page of one list
            over the whole batch (Prolific) and missing work is known only at the end of the pass.
        start: the cursor that produced this step (give it back to list this step again).
        next: the cursor of the following step; None when this was the last.
        first: this step starts a pass from the beginning (a stored cursor no longer fitted the
            platform's list, so the provider started again): anything counted before it is void.
        left: units (MTurk HITs) still to read after this step, when the provider knows.
    """

    submissions: tuple[PlatformSubmission, ...]
    units: Optional[tuple[str, ...]]
    start: Optional[dict[str, Any]]
    next: Optional[dict[str, Any]]
    first: bool = False
    left: Optional[int] = None


@dataclass(frozen=True)
class ReconcileReport:
    """Differences between the platform and crowdqa's local view of a batch.

    Attributes:
        new: on the platform, unknown locally (restore them: a crash lost their arrival).
        changed: known locally with another status (approved by MTurk's auto-approval, returned...).
        missing: known locally, absent on the platform (never reached it, or a local-only test).
        unchanged_count: how many matched.
    """

    new: tuple[PlatformSubmission, ...]
    changed: tuple[PlatformSubmission, ...]
    missing: tuple[str, ...]
    unchanged_count: int
