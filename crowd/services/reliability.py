"""Bulk actions on a batch's workers by how reliable they are: approve, block or message by a threshold,
and bonus the best.

Two measures exist, both computed here from what the database holds, never taken from a request:

* ``skill``: each worker's skill from the batch's aggregated SciQ validations (Dawid-Skene, balanced
  accuracy: 0.5 is chance), counted in judgements (:mod:`crowd.services.judgements`);
* ``gold``: each worker's share of right gold answers on the batch (gold items, or a syllabus batch's
  known-answer questions), counted in graded answers (:class:`annotation.models.GoldStanding`).

Every action goes through the services the one-by-one buttons use (approvals pay through the ledger,
blocks reach the platform, messages go through the batch's messaging) and returns what it did and every
worker or submission it left out, with why. A bonus for the top workers is only *planned* here
(:func:`top_bonus_csv`): the plan is the bulk-bonus CSV, which the bulk-bonus page previews, with its
cost and the budget, before anything is paid (:mod:`crowd.services.bulk_bonus`).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from annotation.models import Assignment, Batch, GoldStanding, IllegalTransition
from crowd.models import Worker

MEASURES = {"skill": "skill", "gold": "gold accuracy"}
"""Measure name -> how summaries name it."""
ACTIONS = ("approve", "block", "message")
PAYABLE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


@dataclass(frozen=True)
class Score:
    """One worker's measure on the batch and how many judgements or graded answers it rests on."""

    worker: Worker
    value: float
    n: int


def scores(batch: Batch, measure: str, min_n: int) -> tuple[list[Score], list[dict[str, Any]]]:
    """The workers' scores on ``batch`` by ``measure``, best first (ties: more evidence first, then
    pseudonym), and the workers left out because their score rests on fewer than ``min_n``.

    Raises:
        ValueError: an unknown measure.
    """
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; choose {' or '.join(MEASURES)}")
    raw: list[tuple[str, float | None, int]] = []
    if measure == "skill":
        from crowd.aggregation import DEFAULT_METHOD, aggregate
        from crowd.services.judgements import batch_gold, batch_judgements

        judgements = batch_judgements(batch)
        if judgements:
            result = aggregate(judgements, DEFAULT_METHOD, gold=batch_gold(batch), with_alpha=False)
            raw = [(p, s.skill, s.n) for p, s in result.workers.items()]
    else:
        standings = GoldStanding.objects.filter(batch=batch, gold_n__gt=0).select_related("worker")
        raw = [(s.worker.pseudonym, s.gold_accuracy, s.gold_n) for s in standings]
    workers = {w.pseudonym: w for w in Worker.objects.filter(pseudonym__in=[p for p, _, _ in raw])}
    ranked, skipped = [], []
    noun = "judgement(s)" if measure == "skill" else "graded gold answer(s)"
    for pseudonym, value, n in raw:
        if value is None or n < min_n:
            skipped.append({"worker": pseudonym, "reason": f"only {n} {noun}, fewer than {min_n}"})
        else:
            ranked.append(Score(workers[pseudonym], value, n))
    ranked.sort(key=lambda s: (-s.value, -s.n, s.worker.pseudonym))
    skipped.sort(key=lambda row: row["worker"])
    return ranked, skipped


def act_by_reliability(
    batch: Batch,
    action: str,
    measure: str,
    threshold: float,
    min_n: int,
    reason: str = "",
    subject: str = "",
    text: str = "",
) -> dict[str, Any]:
    """``approve`` the submitted work of the workers at or above ``threshold``, ``block`` those under
    it (with ``reason``), or ``message`` those under it (``subject`` and ``text``).

    Returns:
        ``{"action", "measure", "threshold", "done": [...], "skipped": [{"worker"/"assignment",
        "reason"}]}``; ``done`` holds assignment ids for ``approve``, pseudonyms otherwise.

    Raises:
        ValueError: an unknown action or measure, a threshold outside 0..1, a block without a reason or
            a message without its subject and text.
    """
    from crowd.services.messaging import message_worker
    from crowd.services.review import ReviewError, approve_assignment, block_worker

    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; choose {', '.join(ACTIONS)}")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the threshold must be between 0 and 1, not {threshold}")
    if action == "block" and not reason.strip():
        raise ValueError("a block needs a reason (it is kept with the worker)")
    if action == "message" and not (subject.strip() and text.strip()):
        raise ValueError("a message needs a subject and a text")
    ranked, skipped = scores(batch, measure, min_n)
    summary: dict[str, Any] = {
        "action": action,
        "measure": measure,
        "threshold": threshold,
        "done": [],
        "skipped": skipped,
    }
    for score in ranked:
        pseudonym = score.worker.pseudonym
        if (score.value >= threshold) != (action == "approve"):
            continue
        if action == "approve":
            work = Assignment.objects.filter(
                hit__batch=batch, worker=score.worker, status=Assignment.Status.SUBMITTED
            ).select_related("hit__batch")
            for assignment in work:
                try:
                    approve_assignment(assignment)
                    summary["done"].append(assignment.pk)
                except (ReviewError, IllegalTransition) as exc:
                    summary["skipped"].append({"assignment": assignment.pk, "reason": str(exc)})
            continue
        if action == "block" and score.worker.blocked:
            summary["skipped"].append({"worker": pseudonym, "reason": "already blocked"})
            continue
        try:
            if action == "block":
                block_worker(score.worker, reason)
            else:
                message_worker(score.worker, batch, subject, text)
            summary["done"].append(pseudonym)
        except ReviewError as exc:
            summary["skipped"].append({"worker": pseudonym, "reason": str(exc)})
    return summary


def top_bonus_csv(
    batch: Batch, measure: str, top: int, amount: Decimal, reason: str, min_n: int
) -> tuple[str, list[dict[str, Any]]]:
    """The bulk-bonus CSV (``worker,amount,reason``) paying ``amount`` to each of the ``top`` best
    workers by ``measure`` who have payable work, and who was left out of the top and why (too little
    evidence, blocked, no submitted or approved work). Nothing is paid here.

    Raises:
        ValueError: an unknown measure, or ``top`` below 1.
    """
    if top < 1:
        raise ValueError(f"the number of workers to bonus must be at least 1, not {top}")
    ranked, skipped = scores(batch, measure, min_n)
    payable = set(
        Assignment.objects.filter(hit__batch=batch, status__in=PAYABLE).values_list("worker_id", flat=True)
    )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["worker", "amount", "reason"])
    chosen = 0
    for score in ranked:
        if chosen >= top:
            break
        pseudonym = score.worker.pseudonym
        if score.worker.blocked:
            skipped.append({"worker": pseudonym, "reason": "blocked"})
        elif score.worker.pk not in payable:
            skipped.append({"worker": pseudonym, "reason": "no submitted or approved work to pay"})
        else:
            writer.writerow([pseudonym, f"{amount:.2f}", reason])
            chosen += 1
    return out.getvalue(), skipped
