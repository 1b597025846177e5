"""Where a sync pass over a batch's submissions stands, kept between runs (``BatchPlatformState``).

Why: a sync of thousands of submissions killed part way, or stopped by throttling that outlasts its
retries, must go on next run from the step it reached, not from the first page; and a routine sync of
a Prolific study should read only the end of its list, where new submissions arrive and undecided ones
live. A ``SyncPass`` starts from the stored cursor of an unfinished pass (``resumed``), else from the
stored start of the list's unsettled part (``incremental``, Prolific), else from the beginning
(``full``; at least every ``CROWDQA_FULL_SYNC_HOURS``). After each step the caller has applied, the
next step's cursor is stored; when the pass ends, the cursor is cleared and the next start recorded.

A study-wide pass remembers the submission ids it saw (``seen``) so that work missing on the platform is
judged once the whole list was read, over both runs of a resumed pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Optional

from django.conf import settings
from django.utils import timezone

from crowd.models import BatchPlatformState
from crowd.providers.base import SubmissionPage, SubmissionStatus

FINAL = frozenset({SubmissionStatus.APPROVED, SubmissionStatus.REJECTED})
"""Platform statuses that never change again (Prolific: a transition cannot be undone)."""


def full_pass_every() -> timedelta:
    """How often a study-wide sync reads the whole list again (``CROWDQA_FULL_SYNC_HOURS``)."""
    return timedelta(hours=float(getattr(settings, "CROWDQA_FULL_SYNC_HOURS", 24)))


@dataclass
class SyncPass:
    """One pass of sync over a batch's submission list, possibly spread over several runs.

    Attributes:
        batch_id: the batch.
        study_wide: the platform lists the batch as one list (Prolific), not unit by unit (MTurk).
        cursor: where this run starts (None: the list's beginning).
        resumed: this run goes on with a pass an earlier run left unfinished.
        incremental: the pass started past the list's settled beginning (missing work is then judged
            only for work that can still change).
        full: the pass read (or is reading) the list from its beginning.
        seen: submission ids a study-wide pass has listed so far.
        mark: the start of the first page holding work that can still change (study-wide).
        last_start: the start of the last page read (study-wide).
        steps: steps read in this run.
    """

    batch_id: int
    study_wide: bool
    cursor: Optional[dict[str, Any]] = None
    resumed: bool = False
    incremental: bool = False
    full: bool = True
    seen: set[str] = field(default_factory=set)
    mark: Optional[dict[str, Any]] = None
    last_start: Optional[dict[str, Any]] = None
    steps: int = 0

    @classmethod
    def begin(cls, batch_id: int, study_wide: bool) -> SyncPass:
        """The pass this run continues or starts, from the batch's stored platform state."""
        state = BatchPlatformState.of(batch_id)
        saved = state.sync_cursor
        if saved:
            return cls(
                batch_id=batch_id,
                study_wide=study_wide,
                cursor=saved.get("next"),
                resumed=True,
                incremental=bool(saved.get("incremental")),
                full=bool(saved.get("full")),
                seen=set(saved.get("seen") or ()),
                mark=saved.get("mark"),
                last_start=saved.get("last_start"),
            )
        due = state.full_synced_at is None or timezone.now() - state.full_synced_at >= full_pass_every()
        if study_wide and state.sync_from and not due:
            return cls(
                batch_id=batch_id, study_wide=True, cursor=state.sync_from, incremental=True, full=False
            )
        return cls(batch_id=batch_id, study_wide=study_wide)

    def restart(self) -> None:
        """The provider started the list again from its beginning: what this pass counted is void."""
        self.incremental, self.full = False, True
        self.seen, self.mark, self.last_start = set(), None, None

    def step_done(self, page: SubmissionPage, still_changing: bool) -> None:
        """Record a step the caller has applied and store where the next one starts.

        Args:
            page: the step.
            still_changing: the page holds work whose status can still change here or there.
        """
        self.steps += 1
        if self.study_wide:
            self.seen.update(s.platform_assignment_id for s in page.submissions)
            if still_changing and self.mark is None:
                self.mark = page.start
            self.last_start = page.start
        if page.next is None:
            return
        BatchPlatformState.change(
            self.batch_id,
            sync_cursor={
                "next": page.next,
                "incremental": self.incremental,
                "full": self.full,
                "seen": sorted(self.seen),
                "mark": self.mark,
                "last_start": self.last_start,
                "at": timezone.now().isoformat(timespec="seconds"),
            },
        )

    def finish(self) -> None:
        """The pass read the list to its end: clear the cursor and record where the next pass starts."""
        now = timezone.now()
        values: dict[str, Any] = {"sync_cursor": None, "synced_at": now}
        if self.full:
            values["full_synced_at"] = now
        if self.study_wide:
            values["sync_from"] = self.mark or self.last_start
        BatchPlatformState.change(self.batch_id, **values)

    def summary(self) -> dict[str, Any]:
        """What the sync's counts say about the pass."""
        return {
            "steps": self.steps,
            "resumed": self.resumed,
            "incremental": self.incremental,
        }


def still_changing(page: SubmissionPage, local_now: dict[str, SubmissionStatus]) -> bool:
    """True when the page holds work that can still change (not final there, or not yet followed here).

    A submission with no local work (``unmatched``) and a final platform status counts as settled: the
    sync that found it reported it, and nothing about it will change.
    """
    return any(
        s.status not in FINAL
        or (s.platform_assignment_id in local_now and local_now[s.platform_assignment_id] != s.status)
        for s in page.submissions
    )
