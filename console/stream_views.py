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

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.generic import DetailView

from annotation.models import HIT, Assignment, Distractor, QAPair, Validation
from annotation.permissions import ResearcherRequiredMixin
from console.review_queue import QueueFilter, queue
from console.review_views import AssignmentDetailView
from crowd.providers.traits import accepted_rejection_categories

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
    known = [c for c in CATEGORY_LABELS if c in accepted_rejection_categories() or c == "OTHER"]
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

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        """An empty stream is not an error: back to the queue with the same filters, saying why."""
        self.flt, self.ids = self._ids()
        if not self.ids:
            messages.info(request, "Nothing to review with these filters.")
            return redirect(f"{reverse('annotation:review-queue')}?{urlencode(_filter_params(self.flt))}")
        return super().get(request, *args, **kwargs)

    def get_object(self, queryset: Any = None) -> Assignment:
        at = self.request.GET.get("at", "")
        chosen: Optional[int] = int(at) if at.isdecimal() and at.isascii() else None
        if chosen is None or chosen not in self.ids:
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


class HitCompareView(ResearcherRequiredMixin, DetailView):
    """The submitted work of every worker of one HIT side by side: QA pairs by card, or validations.

    Security behavior: reading only, with the researcher ``view`` permission (or the demo's read-only
    dashboard); workers appear by pseudonym; decisions stay on each submission's own page.
    """

    model = HIT
    template_name = "annotation/review_compare.html"
    context_object_name = "hit"

    def get_queryset(self) -> Any:
        return HIT.objects.select_related("batch", "document", "qa_pair")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        hit: HIT = self.object
        assignments = list(
            hit.assignments.exclude(submitted_at__isnull=True)
            .select_related("worker")
            .prefetch_related("qa_pairs")
            .order_by("submitted_at", "pk")
        )
        by_position: dict[int, dict[int, QAPair]] = {}
        for assignment in assignments:
            for pair in assignment.qa_pairs.all():
                by_position.setdefault(pair.position, {})[assignment.pk] = pair
        context["assignments"] = assignments
        context["rows"] = [
            {"position": position, "cells": [by_position[position].get(a.pk) for a in assignments]}
            for position in sorted(by_position)
        ]
        validations = {v.assignment_id: v for v in Validation.objects.filter(assignment__in=assignments)}
        distractors: dict[int, list[Distractor]] = {}
        for d in Distractor.objects.filter(validation__in=list(validations.values())).order_by(
            "origin", "position"
        ):
            distractors.setdefault(d.validation_id, []).append(d)
        context["validations"] = [
            {
                "validation": validations.get(a.pk),
                "distractors": distractors.get(validations[a.pk].pk, []) if a.pk in validations else [],
            }
            for a in assignments
        ]
        context["has_validations"] = bool(validations)
        return context
