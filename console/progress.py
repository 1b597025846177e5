"""A batch's live progress: what the batch page polls every few seconds while work is under way.

Why: a researcher running a batch wants to see it move (places taken, who is working right now, which
HITs are done, what it has cost, whether QC flags pile up) without reloading a long page. This module
computes one small JSON-ready dict with a handful of aggregate queries; the page's script
(``console/static/console/progress.js``) renders it into the "Live progress" card.

Worker rows carry the pseudonym only, never the platform id.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Optional

from django.db.models import Count, Q
from django.utils import timezone

from annotation.hits import handler_for
from annotation.hits.base import BuiltFrom
from annotation.models import HIT, Assignment, Batch, QAPair
from annotation.qc.common import problem_flags
from crowd.providers.costs import format_money
from crowd.services.batch_jobs import jobs_of
from crowd.services.budget import spent_cents

MAX_HITS = 200
"""HIT rows sent per poll (the first by position); the totals always cover every HIT."""

WORKING_NOW = 50
"""At most this many "working now" rows (the longest-running first)."""

PLACE_STATES: tuple[tuple[str, str], ...] = (
    ("free", "Free"),
    ("active", "Working now"),
    ("awaiting_review", "Awaiting review"),
    ("unconfirmed", "Unconfirmed by the platform"),
    ("approved", "Approved"),
    ("rejected", "Rejected"),
    ("returned", "Returned"),
    ("timed_out", "Timed out"),
)
"""Place states in display order, with their labels (``returned`` and ``timed_out`` freed their place).

``active`` and ``awaiting_review`` count sessions the platform vouches for; ``unconfirmed`` counts the
MTurk sessions open or submitted that MTurk has not confirmed yet (sync or review confirm them): they
hold no place, and some may be made-up ids (docs/admission.md).
"""


def _hit_label(hit: HIT) -> str:
    if hit.document_id:
        return hit.document.name
    if hit.qa_pair_id:
        return hit.qa_pair.question
    return f"HIT {hit.position + 1}"


def _minutes(seconds: Optional[float]) -> Optional[int]:
    return None if seconds is None else max(0, round(seconds / 60))


def live_progress(batch: Batch, now: Optional[datetime] = None) -> dict[str, Any]:
    """Compute the live progress of ``batch``.

    Returns:
        ``places`` (list of ``{"state", "label", "n"}`` in :data:`PLACE_STATES` order, plus ``total``),
        ``hits`` (totals by status and up to :data:`MAX_HITS` rows ``{"position", "label", "status",
        "taken", "unconfirmed", "submitted", "max"}``: ``taken`` counts places held by sessions the
        platform vouches for, ``unconfirmed`` the live sessions it has not confirmed yet), ``working_now``
        (``{"worker", "confirmed", "hit", "minutes", "minutes_left"}``),
        ``cost`` (formatted amounts), ``qc`` (pairs, flagged pairs, the commonest problem codes) and, for
        SciQ validation batches, ``short_of_suggestions`` (questions offered fewer than six); ``jobs``: the
        batch's publish, sync and pay jobs (``crowd.services.batch_jobs.jobs_of``: done, left, error).
    """
    now = now or timezone.now()
    by_status: Counter[str] = Counter()
    vouched_for: Counter[str] = Counter()
    for status, vouched, n in (
        Assignment.objects.filter(hit__batch=batch)
        .order_by()
        .values_list("status", "vouched")
        .annotate(n=Count("pk"))
    ):
        by_status[status] += n
        vouched_for[status] += n if vouched else 0
    in_progress = (Assignment.Status.ACCEPTED, Assignment.Status.SUBMITTED)
    unconfirmed = sum(by_status[status] - vouched_for[status] for status in in_progress)
    hits = list(
        batch.hits.with_live_count()
        .annotate(n_submitted=Count("assignments", filter=Q(assignments__submitted_at__isnull=False)))
        .select_related("document", "qa_pair")
        .order_by("position")
    )
    open_places = sum(max(0, h.max_assignments - h.n_live) for h in hits if h.status == HIT.Status.OPEN)
    counts = {
        "free": open_places if batch.status == Batch.Status.PUBLISHED else 0,
        "active": vouched_for[Assignment.Status.ACCEPTED],
        "awaiting_review": vouched_for[Assignment.Status.SUBMITTED],
        "unconfirmed": unconfirmed,
        "approved": by_status[Assignment.Status.APPROVED],
        "rejected": by_status[Assignment.Status.REJECTED],
        "returned": by_status[Assignment.Status.RETURNED],
        "timed_out": by_status[Assignment.Status.EXPIRED],
    }
    working = (
        Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.ACCEPTED)
        .select_related("worker", "hit")
        .order_by("accepted_at")[:WORKING_NOW]
    )
    cost = spent_cents(batch)
    pairs = list(QAPair.objects.filter(assignment__hit__batch=batch).values_list("qc_flags", flat=True))
    codes: Counter[str] = Counter()
    flagged = 0
    for flags in pairs:
        problems = problem_flags(list(flags or []))
        flagged += bool(problems)
        codes.update(set(problems))
    result: dict[str, Any] = {
        "batch": batch.pk,
        "status": batch.status,
        "status_label": batch.get_status_display(),
        "updated": now.isoformat(timespec="seconds"),
        "places": {
            "total": sum(h.max_assignments for h in hits),
            "states": [{"state": s, "label": label, "n": counts[s]} for s, label in PLACE_STATES],
        },
        "hits": {
            "total": len(hits),
            "completed": sum(1 for h in hits if h.status == HIT.Status.COMPLETED),
            "rows": [
                {
                    "position": h.position + 1,
                    "label": _hit_label(h)[:80],
                    "status": h.get_status_display(),
                    "taken": h.n_live,
                    "unconfirmed": h.n_unconfirmed,
                    "submitted": h.n_submitted,
                    "max": h.max_assignments,
                }
                for h in hits[:MAX_HITS]
            ],
        },
        "working_now": [
            {
                "worker": a.worker.pseudonym,
                "confirmed": a.vouched,
                "hit": a.hit.position + 1,
                "minutes": _minutes((now - a.accepted_at).total_seconds()),
                "minutes_left": _minutes((a.expires_at - now).total_seconds()) if a.expires_at else None,
            }
            for a in working
        ],
        "cost": {
            "paid": format_money(cost["rewards"] + cost["bonuses"] + cost["fees"], batch.currency),
            "committed": format_money(cost["committed"], batch.currency),
            "total": format_money(cost["total"], batch.currency),
            "cap": format_money(batch.budget_cap_cents, batch.currency) if batch.budget_cap_cents else None,
            "unpaid_batch": batch.reward_cents == 0,
        },
        "qc": {
            "pairs": len(pairs),
            "flagged": flagged,
            "codes": [{"code": c, "n": n} for c, n in codes.most_common(5)],
        },
        "jobs": jobs_of(batch.pk),
    }
    if handler_for(batch.kind).built_from == BuiltFrom.QUESTIONS:
        from crowd.services.validation_hits import short_of_suggestions

        result["short_of_suggestions"] = [
            {"pair": p.pk, "question": p.question[:80]} for p in short_of_suggestions(batch)
        ]
    return result
