"""A study's submissions page by page for sync, each page locatable again on a later run.

Why: a sync of a study with thousands of submissions that is killed or throttled for longer than its
retries must go on from where it stopped, and a routine sync should read only the end of the list
where new or still-changing submissions are. Prolific's ``GET /submissions/?study=`` pages a list
ordered by start time: a submission starts once, so the list only grows at its end and earlier pages
keep their content. A cursor is ``{"page": n, "anchor": <id of the page's first submission>}``; when
page ``n`` no longer opens with the anchor (the list changed under it) or is gone, the pass starts
again from page 1 (``first``), so a stale cursor costs a full pass, never a missed submission.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from crowd.providers.prolific import api as prolific_api
from crowd.providers.prolific import errors

PAGE_SIZE = 100
"""Submissions asked for per page."""


@dataclass(frozen=True)
class RawPage:
    """One page as Prolific answered it, with where it starts and where the next one does."""

    items: list[dict[str, Any]]
    start: dict[str, Any]
    next: Optional[dict[str, Any]]
    first: bool


def _read(client: prolific_api.ProlificClient, study_id: str, page: int) -> tuple[list[dict[str, Any]], bool]:
    """The page's submissions and whether a later page exists (a page past the end reads as empty)."""
    try:
        data = prolific_api.Submissions.page(client, study_id, page, PAGE_SIZE)
    except errors.ProlificNotFoundError:
        if page == 1:
            raise
        return [], False
    items = list(data.get("results", [])) if isinstance(data, dict) else list(data)
    links = data.get("_links") or {} if isinstance(data, dict) else {}
    nxt = links.get("next") if isinstance(links, dict) else None
    href = nxt.get("href") if isinstance(nxt, dict) else nxt
    return items, bool(href) and bool(items)


def _fits(items: list[dict[str, Any]], anchor: Optional[str]) -> bool:
    return bool(items) and str(items[0].get("id")) == anchor


def pages(
    client: prolific_api.ProlificClient, study_id: str, cursor: Optional[Mapping[str, Any]] = None
) -> Iterator[RawPage]:
    """Yield the study's pages from ``cursor`` (None: from page 1) to the last.

    Each page is read before the one before it is handed out, so a page's ``next`` cursor carries the
    anchor of the page it points to.
    """
    number = max(1, int((cursor or {}).get("page") or 1))
    first = cursor is None
    items, more = _read(client, study_id, number)
    if cursor is not None and not _fits(items, (cursor or {}).get("anchor")):
        if number == 1 and not items:
            first = False  # an empty study stays empty: nothing to start again
        else:
            number, first = 1, True
            items, more = _read(client, study_id, number)
    while True:
        following: list[dict[str, Any]] = []
        if more:
            following, more_after = _read(client, study_id, number + 1)
        nxt = {"page": number + 1, "anchor": str(following[0]["id"])} if following else None
        anchor = str(items[0]["id"]) if items else None
        yield RawPage(items=items, start={"page": number, "anchor": anchor}, next=nxt, first=first)
        if nxt is None:
            return
        number, items, more, first = number + 1, following, more_after, False
