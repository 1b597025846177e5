"""Active time on an assignment: how long the worker really worked, as the HIT page measures it.

Why: submit time minus accept time counts a tab left open for an hour, so hourly pay computed from it is
wrong in both directions. The HIT page (``crowdqa/hit.js``) counts only the time its page is visible and
the worker gave an input (key, pointer, scroll, focus) within the last :data:`IDLE_SECONDS`; it sends its
running total with every autosave, when the page is hidden or left (``sendBeacon``), and with the
submission.

Each page load counts on its own (a reload starts a new count), so the server keeps, per page load id, the
largest total it has heard (beacons arrive out of order and twice) and the assignment's active time is the
sum over its page loads, never more than the wall time since it was accepted (two tabs open at once would
otherwise count twice). Nothing here imports Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Optional

IDLE_SECONDS = 90
"""Seconds without input after which a visible page stops counting (reading a syllabus page takes time)."""
PAGE_FIELD = "active_page"
MS_FIELD = "active_ms"
MAX_PAGES = 200
"""Page loads kept per assignment; a page id beyond these is ignored (the total stays bounded)."""
_PAGE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def parse_report(page: object, ms: object) -> Optional[tuple[str, int]]:
    """A page's report ``(page id, active milliseconds)`` from form values, or None when malformed."""
    if not isinstance(page, str) or not _PAGE_ID.match(page):
        return None
    try:
        value = int(str(ms))
    except (TypeError, ValueError):
        return None
    if value < 0:
        return None
    return page, value


def merge_report(
    pages: Mapping[str, int], page: str, ms: int, wall_seconds: float
) -> tuple[dict[str, int], float]:
    """Merge one page's running total into the per-page totals.

    Args:
        pages: page load id -> largest active milliseconds reported so far.
        page: the reporting page load.
        ms: its running total.
        wall_seconds: seconds since the assignment was accepted (the most it can have been worked).

    Returns:
        The new per-page totals and the active seconds of the assignment (their sum, capped at
        ``wall_seconds``).
    """
    merged = dict(pages)
    cap_ms = max(0, int(wall_seconds * 1000))
    if page in merged or len(merged) < MAX_PAGES:
        merged[page] = min(max(merged.get(page, 0), ms), cap_ms)
    return merged, min(sum(merged.values()) / 1000.0, max(0.0, wall_seconds))
