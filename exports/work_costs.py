"""What the crowd work behind a release paid and cost: pay per hour per HIT kind, pay per accepted pair.

Why: a dataset card that reports only a median accept-to-submit time hides both whether the workers were
paid fairly (a tab left open for an hour counts as an hour's work) and what each kind of question cost.
Here each kind of HIT (writing, validating) gets its pay per hour of *active* time (the HIT page's own
measure, :mod:`annotation.active_time`; accept-to-submit where the page measured none), and each question
type its worker pay per released pair: the writing submission's pay shared among the pairs it wrote, plus
the pay of every validation of the pair (SciQ stage 2).

Pay is what the ledger holds for the submission (rewards and bonuses, failed payments left out); an
approved submission without a reward row (the local crowd, or a reward not yet sent) counts the batch's
reward. Only decided work counts (approved or rejected: a rejected submission earned nothing for its
time). Platform fees are not worker pay and are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, Batch, QAPair, Validation
from crowd.models import Payment

DECIDED = (Assignment.Status.APPROVED, Assignment.Status.REJECTED)


@dataclass(frozen=True)
class Work:
    """One decided submission: its HIT kind, what it paid and how long it took."""

    kind: str
    currency: str
    paid_cents: int
    seconds: Optional[float]
    active: bool


def pay_by_kind(work: Iterable[Work], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per HIT kind (and currency): submissions, hours worked, share of them with active time measured,
    pay, and pay per hour (``None`` without a measured time). Sorted by kind label."""
    groups: dict[tuple[str, str], list[Work]] = defaultdict(list)
    for row in work:
        groups[(row.kind, row.currency)].append(row)
    out = []
    for (kind, currency), rows in groups.items():
        timed = [r for r in rows if r.seconds]
        seconds = sum(r.seconds or 0.0 for r in timed)
        paid_timed = sum(r.paid_cents for r in timed)
        out.append(
            {
                "kind": labels.get(kind, kind),
                "currency": currency,
                "submissions": len(rows),
                "hours": round(seconds / 3600, 3),
                "active_share": round(sum(r.active for r in timed) / len(timed), 3) if timed else None,
                "paid_cents": sum(r.paid_cents for r in rows),
                "hourly_cents": round(paid_timed * 3600 / seconds, 1) if seconds else None,
            }
        )
    return sorted(out, key=lambda r: (r["kind"], r["currency"]))


def cost_by_question_type(
    pairs: Iterable[tuple[int, str, Optional[int]]],
    paid: Mapping[int, tuple[int, str]],
    written: Mapping[int, int],
    validations: Iterable[tuple[int, int]],
) -> list[dict[str, Any]]:
    """Worker pay per released pair, by question type (and currency).

    Args:
        pairs: ``(pair id, question type, writing assignment id or None)``.
        paid: decided assignment id -> (cents paid, currency).
        written: writing assignment id -> how many pairs it wrote (its pay is shared among them).
        validations: ``(pair id, validating assignment id)``.

    Returns:
        ``{"question_type", "currency", "pairs", "cost_cents_per_pair"}`` rows, for the types with at
        least one pair whose work is on file; sorted by type.
    """
    by_pair: dict[int, list[int]] = defaultdict(list)
    for pair, assignment in validations:
        by_pair[pair].append(assignment)
    totals: dict[tuple[str, str], list[float]] = defaultdict(list)
    for pair, question_type, writer in pairs:
        parts: list[tuple[float, str]] = []
        if writer in paid:
            cents, currency = paid[writer]
            parts.append((cents / max(1, written.get(writer, 1)), currency))
        parts += [(float(paid[a][0]), paid[a][1]) for a in by_pair.get(pair, []) if a in paid]
        if not parts:
            continue
        totals[(question_type, parts[0][1])].append(sum(cents for cents, _ in parts))
    return [
        {
            "question_type": question_type,
            "currency": currency,
            "pairs": len(costs),
            "cost_cents_per_pair": round(sum(costs) / len(costs), 2),
        }
        for (question_type, currency), costs in sorted(totals.items())
    ]


def release_work_costs(pairs: QuerySet[QAPair]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """:func:`pay_by_kind` and :func:`cost_by_question_type` for the work behind a release's ``pairs``
    (the submissions that wrote them and those that validated them); bounded queries, no row per pair
    beyond the ids."""
    plain = pairs.prefetch_related(None).select_related(None).order_by()
    involved = Q(pk__in=plain.values("assignment_id")) | Q(validation__qa_pair__in=plain.values("pk"))
    decided = Assignment.objects.filter(involved, status__in=DECIDED).order_by()
    assignments = decided.values_list(
        "pk",
        "status",
        "hit__batch__kind",
        "hit__batch__currency",
        "hit__batch__reward_cents",
        "active_seconds",
        "time_on_task_seconds",
    )
    rows = list(assignments)
    if not rows:
        return [], []
    ledger: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for assignment, kind, cents in (
        Payment.objects.filter(assignment__in=decided.values("pk"))
        .exclude(status=Payment.Status.FAILED)
        .values_list("assignment_id", "kind", "amount_cents")
    ):
        ledger[assignment][kind] += cents
    work: list[Work] = []
    paid: dict[int, tuple[int, str]] = {}
    for pk, status, kind, currency, reward, active, wall in rows:
        entries = ledger.get(pk, {})
        due = reward if status == Assignment.Status.APPROVED else 0
        cents = entries.get(Payment.Kind.REWARD, due) + entries.get(Payment.Kind.BONUS, 0)
        paid[pk] = (cents, currency)
        work.append(Work(kind, currency, cents, active if active is not None else wall, active is not None))
    written = dict(
        QAPair.objects.filter(assignment__in=decided.values("pk"))
        .order_by()
        .values("assignment_id")
        .annotate(n=Count("pk"))
        .values_list("assignment_id", "n")
    )
    validations = Validation.objects.filter(
        qa_pair__in=plain.values("pk"), assignment__in=decided.values("pk")
    )
    costs = cost_by_question_type(
        plain.values_list("pk", "question_type", "assignment_id").iterator(10_000),
        paid,
        written,
        validations.order_by().values_list("qa_pair_id", "assignment_id"),
    )
    return pay_by_kind(work, dict(Batch.Kind.choices)), costs
