"""The review stream: one submission at a time, with next / previous, in the order of the review queue.

Why: the bulk queue shows every submission in full; a researcher checking work one item at a time wants
a single submission on screen with approve, reject (reason and category), bonus and block beside it,
keyboard shortcuts, and the next item opening after each decision. The stream keeps the queue's filters
(batch, flag, type, worker, status): with status "all" or "approved"/"rejected", decided items stay
findable and can be opened again.

Security behavior: reading needs the researcher ``view`` permission (or the demo's read-only public
dashboard), as the assignment page does; the decisions are posted to the existing review, bonus and
block actions, each behind its own permission with CSRF, which send the researcher back here only
through :func:`console.review_views._back_to` (same-site paths only).
"""

from __future__ import annotations

from typing import Any, Optional
from urllib.parse import urlencode

from django.http import Http404
from django.urls import reverse

from annotation.models import Assignment
from console.review_queue import QueueFilter, queue
from console.review_views import AssignmentDetailView
from crowd.providers.prolific.api import REJECTION_CATEGORIES

CATEGORY_LABELS = {
    "OTHER": "Other",
    "LOW_EFFORT": "Low effort",
    "FAILED_INSTRUCTIONS": "Did not follow the instructions",
    "FAILED_CHECK": "Failed an attention check",
    "TOO_QUICKLY": "Too quick",
    "TOO_SLOWLY": "Too slow",
    "NO_DATA": "No data",
    "MALINGERING": "Malingering",
}
"""Rejection categories offered (Prolific's names; other platforms keep the category with the reason)."""


STREAM_STATUSES = (
    ("submitted", "Waiting for a decision"),
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("all", "All submitted work"),
)
"""The stream's status filter: decided work stays findable under its own status or "all"."""


def rejection_categories() -> list[tuple[str, str]]:
    """(value, label) of the rejection categories the platforms accept, "Other" first."""
    known = [c for c in CATEGORY_LABELS if c in REJECTION_CATEGORIES or c == "OTHER"]
    return [(c, CATEGORY_LABELS[c]) for c in known]


def _filter_params(flt: QueueFilter) -> dict[str, str]:
    params = {
        "batch": str(flt.batch) if flt.batch is not None else "",
        "flag": flt.flag,
        "type": flt.question_type,
        "worker": flt.worker,
        "status": flt.status or "all",
    }
    return {k: v for k, v in params.items() if v}


class ReviewStreamView(AssignmentDetailView):
    """One submission of the filtered queue (``?at=<id>``, default the first), with its neighbours."""

    template_name = "annotation/assignment.html"

    def _ids(self) -> tuple[QueueFilter, list[int]]:
        params = self.request.GET.copy()
        if params.get("status") == "all":
            params["status"] = ""
        flt = QueueFilter.from_params(params)
        return flt, [item.assignment.pk for item in queue(flt)]

    def get_object(self, queryset: Any = None) -> Assignment:
        self.flt, self.ids = self._ids()
        at = self.request.GET.get("at", "")
        chosen: Optional[int] = int(at) if at.isdecimal() and at.isascii() else None
        if chosen is None or chosen not in self.ids:
            if not self.ids:
                raise Http404("Nothing to review with these filters.")
            chosen = self.ids[0]
        return self.get_queryset().get(pk=chosen)

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        index = self.ids.index(self.object.pk)
        params = _filter_params(self.flt)
        base = reverse("annotation:review-stream")

        def url(pk: Optional[int]) -> Optional[str]:
            return None if pk is None else f"{base}?{urlencode({**params, 'at': pk})}"

        previous = self.ids[index - 1] if index > 0 else None
        following = self.ids[index + 1] if index + 1 < len(self.ids) else None
        context["stream"] = {
            "position": index + 1,
            "total": len(self.ids),
            "previous_url": url(previous),
            "next_url": url(following),
            # After a decision: the next item, or back to this filter's first item when this was the last.
            "after_url": url(following) or f"{base}?{urlencode(params)}",
            "queue_url": f"{reverse('annotation:review-queue')}?{urlencode(params)}",
            "filters": params,
        }
        context["rejection_categories"] = rejection_categories()
        context["stream_statuses"] = STREAM_STATUSES
        return context
