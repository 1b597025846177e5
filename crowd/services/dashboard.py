"""Numbers for a batch's dashboard: progress, cost so far, time, hourly pay, QC flags, per-worker rows.

Why: the researcher watches a running batch for money (cost against the cap, effective hourly pay that
should stay fair) and for quality (QC flag rates, workers whose pairs are often flagged). Worker rows carry
the pseudonym only, never the platform id.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any, Optional

from django.db.models import Count

from annotation.models import HIT, Assignment, Batch, GoldItem, GoldStanding, QAPair
from annotation.qc.common import problem_flags
from crowd.providers.costs import effective_hourly_pay_cents
from crowd.services.budget import spent_cents
from crowd.services.lifecycle import estimate_for


def _median(values: list[float]) -> Optional[float]:
    return statistics.median(values) if values else None


def quality_items(batch: Batch) -> Optional[dict[str, Any]]:
    """The batch's gold and attention items (attached, served), or a syllabus QA batch's known-answer
    questions per HIT (``questions``), and its thresholds; None without any."""
    from annotation.hits import handler_for
    from crowd.gold import Thresholds

    limits = Thresholds.from_options(batch.options)
    if handler_for(batch.kind).gold_quiz:
        questions = ((batch.options or {}).get("quiz") or {}).get("n") or 0
        if not questions:
            return None
        return {
            "questions": questions,
            "warn_below": limits.warn_below,
            "block_below": limits.block_below,
            "min_answers": limits.min_answers,
        }
    items = GoldItem.objects.filter(batch=batch).order_by()
    attached = dict(items.values_list("kind").annotate(n=Count("pk")).values_list("kind", "n"))
    if not attached:
        return None
    served = dict(
        items.filter(hit__isnull=False).values_list("kind").annotate(n=Count("pk")).values_list("kind", "n")
    )
    return {
        **{
            kind: {"attached": attached.get(kind, 0), "served": served.get(kind, 0)}
            for kind in GoldItem.Kind.values
        },
        "gold_rate": batch.options.get("gold_rate"),
        "attention_rate": batch.options.get("attention_rate"),
        "warn_below": limits.warn_below,
        "block_below": limits.block_below,
        "min_answers": limits.min_answers,
        "attention_block": limits.attention_block,
    }


def worker_reliability(batch: Batch) -> dict[str, Any]:
    """The aggregated SciQ stage-2 validations of ``batch`` (``judgements.batch_judgements``) by the
    default method: ``method``, ``labels``, ``items``, ``rejected`` (items whose verdict is
    ``reject``), ``alpha`` and ``workers`` (pseudonym -> ``skill``, ``n``); empty without validations."""
    from crowd.aggregation import DEFAULT_METHOD, REJECT, aggregate
    from crowd.services.judgements import batch_gold, batch_judgements

    judgements = batch_judgements(batch)
    if not judgements:
        return {}
    gold = batch_gold(batch)
    result = aggregate(judgements, DEFAULT_METHOD, gold=gold)
    questions = {item: v for item, v in result.items.items() if item not in gold}
    return {
        "method": result.method,
        "labels": result.labels,
        "items": len(questions),
        "gold_items": len(result.items) - len(questions),
        "rejected": sum(1 for v in questions.values() if v.label == REJECT),
        "alpha": result.alpha,
        "workers": {w: {"skill": s.skill, "n": s.n} for w, s in result.workers.items()},
    }


def _worked_seconds(a: Assignment) -> Optional[float]:
    """Seconds the worker spent on an assignment: its measured active time, else accept-to-submit."""
    return a.active_seconds if a.active_seconds is not None else a.time_on_task_seconds


def _median_times(
    assignments: Iterable[Assignment],
) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """Median seconds of the submitted work: accept to submit, active, and worked (``_worked_seconds``)."""
    times = [
        a.time_on_task_seconds for a in assignments if a.time_on_task_seconds is not None and a.submitted_at
    ]
    # Pay per hour of work counts the time the HIT page was visible and in use where the page measured
    # it (annotation.active_time), and falls back to accept-to-submit time for work submitted without.
    worked = [_worked_seconds(a) for a in assignments if a.submitted_at and _worked_seconds(a) is not None]
    active = [a.active_seconds for a in assignments if a.submitted_at and a.active_seconds]
    return _median(times), _median(active), _median(worked)


class _QCCounts:
    """The QC flags of a batch's pairs: counted by code, pairs with a problem, and per worker."""

    def __init__(self, batch: Batch) -> None:
        pairs = QAPair.objects.filter(assignment__hit__batch=batch).values("assignment__worker", "qc_flags")
        self.pairs = 0
        self.flagged = 0
        self.code_counts: Counter[str] = Counter()
        self.per_worker_pairs: dict[int, int] = defaultdict(int)
        self.per_worker_flags: dict[int, int] = defaultdict(int)
        for pair in pairs:
            flags = list(pair["qc_flags"] or [])
            self.pairs += 1
            self.code_counts.update(set(flags))
            # Normalisations QC applied (fixed flags) are counted by code but are not a worker's fault.
            problems = problem_flags(flags)
            self.flagged += bool(problems)
            self.per_worker_pairs[pair["assignment__worker"]] += 1
            self.per_worker_flags[pair["assignment__worker"]] += len(problems)


def _worker_rows(
    assignments: Iterable[Assignment], pay_per_assignment: int, qc: _QCCounts
) -> list[dict[str, Any]]:
    """One row per worker of the batch, by pseudonym: assignments by outcome, time, pay and QC flags."""
    workers: dict[int, dict[str, Any]] = {}
    worker_times: dict[int, list[float]] = defaultdict(list)
    worker_active: dict[int, list[float]] = defaultdict(list)
    for a in assignments:
        row = workers.setdefault(
            a.worker_id,
            {
                "id": a.worker_id,
                "pseudonym": a.worker.pseudonym,
                "platform": a.worker.platform,
                "blocked": a.worker.blocked,
                "assignments": 0,
                "submitted": 0,
                "approved": 0,
                "rejected": 0,
            },
        )
        row["assignments"] += 1
        if a.submitted_at:
            row["submitted"] += 1
        row["approved"] += a.status == Assignment.Status.APPROVED
        row["rejected"] += a.status == Assignment.Status.REJECTED
        if a.time_on_task_seconds is not None and a.submitted_at:
            worker_times[a.worker_id].append(a.time_on_task_seconds)
        if a.submitted_at and _worked_seconds(a) is not None:
            worker_active[a.worker_id].append(_worked_seconds(a) or 0.0)
    for worker_id, row in workers.items():
        active = worker_active[worker_id]
        row["median_seconds"] = _median(worker_times[worker_id])
        row["worked_seconds"] = round(sum(active), 1) if active else None
        row["hourly_pay_cents"] = (
            effective_hourly_pay_cents(pay_per_assignment * len(active), sum(active)) if active else None
        )
        row["pairs"] = qc.per_worker_pairs.get(worker_id, 0)
        row["flags_per_pair"] = (qc.per_worker_flags[worker_id] / row["pairs"]) if row["pairs"] else None
    return sorted(workers.values(), key=lambda r: r["pseudonym"])


def _add_records(
    rows: list[dict[str, Any]], reliability: dict[str, Any], gold: dict[int, GoldStanding]
) -> None:
    """Add each worker's skill from the aggregated validations and its gold and attention record."""
    for row in rows:
        found = reliability["workers"].get(row["pseudonym"]) if reliability else None
        row["skill"] = found["skill"] if found else None
        row["judgements"] = found["n"] if found else 0
        record = gold.get(row["id"])
        row["gold_accuracy"] = record.gold_accuracy if record else None
        row["gold_n"] = record.gold_n if record else 0
        row["attention_n"] = record.attention_n if record else 0
        row["attention_failed"] = record.attention_failed if record else 0
        row["gold_state"] = record.state if record else None
        row["gold_reason"] = record.reason if record else ""


def batch_stats(batch: Batch) -> dict[str, Any]:
    """Compute the dashboard of a batch.

    Returns:
        ``progress`` (HITs by status, assignments by status), ``cost`` (ledger rewards, bonuses, fees,
        committed, total, estimate, budget cap), ``median_seconds`` per HIT (accept to submit),
        ``median_active_seconds`` (measured by the HIT page), ``hourly_pay_cents`` (reward plus mean
        bonus over the median worked time: active time where the page measured it, else accept to
        submit; None without times), ``qc`` (pairs, flagged pairs, rate per code) and ``workers`` (one
        dict per worker, by pseudonym, with its summed ``worked_seconds`` (active time where
        measured), ``hourly_pay_cents`` and its record on the batch's gold and attention items:
        ``gold_accuracy`` (None before a gold answer), ``gold_n``, ``attention_n``,
        ``attention_failed``, ``gold_state`` (ok / warned / blocked, None without an item answered) and
        ``gold_reason``).
    """
    hits = dict(HIT.objects.filter(batch=batch).values_list("status").annotate(n=Count("pk")))
    assignments = Assignment.objects.filter(hit__batch=batch).select_related("worker")
    by_status = Counter(a.status for a in assignments)
    median_seconds, median_active, median_worked = _median_times(assignments)
    cost = spent_cents(batch)
    submitted = sum(
        by_status[s]
        for s in (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)
    )
    mean_bonus = cost["bonuses"] / submitted if submitted else 0
    hourly = effective_hourly_pay_cents(round(batch.reward_cents + mean_bonus), median_worked or 0)
    qc = _QCCounts(batch)
    workers = _worker_rows(assignments, round(batch.reward_cents + mean_bonus), qc)
    reliability = worker_reliability(batch)
    _add_records(workers, reliability, {s.worker_id: s for s in GoldStanding.objects.filter(batch=batch)})
    return {
        "reliability": {k: v for k, v in reliability.items() if k != "workers"} if reliability else None,
        "quality_items": quality_items(batch),
        "batch": batch.pk,
        "status": batch.status,
        "provider": batch.provider,
        "progress": {
            "hits": {s: hits.get(s, 0) for s in HIT.Status.values},
            "hits_total": sum(hits.values()),
            "assignments": {s: by_status.get(s, 0) for s in Assignment.Status.values},
        },
        "cost": {
            **{f"{k}_cents": v for k, v in cost.items()},
            "estimate_cents": estimate_for(batch).total_cents,
            "budget_cap_cents": batch.budget_cap_cents,
            "currency": batch.currency,
        },
        "median_seconds": median_seconds,
        "median_active_seconds": median_active,
        "hourly_pay_cents": hourly,
        "qc": {
            "pairs": qc.pairs,
            "flagged_pairs": qc.flagged,
            "flagged_rate": qc.flagged / qc.pairs if qc.pairs else None,
            "rates": {code: n / qc.pairs for code, n in sorted(qc.code_counts.items())},
        },
        "workers": workers,
    }
