"""Repeated judgements stored in the database, aggregated: SciQ stage-2 validations of a batch.

The aggregation itself is :mod:`crowd.aggregation` (crowd-kit, no Django); this module only reads the
validations a batch holds. Work that was rejected is left out (a researcher already judged it worthless);
submitted and approved work counts. Workers are named by pseudonym, never by platform id.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from annotation.models import Assignment, Batch, GoldItem, IllegalTransition, Validation
from crowd.aggregation import Judgement, validation_label

COUNTED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
"""Assignment states whose validations are aggregated."""


def batch_judgements(batch: Batch) -> list[Judgement]:
    """The stage-2 validations of ``batch``: those its HITs hold (a stage-2 batch) or those of the
    questions it collected (a stage-1 batch), with the answers to the gold items served in its stage 2.
    Items are QA pair ids, labels ``accept`` / ``reject``. Answers to attention items are no judgements
    (the question told the worker what to tick) and are left out.
    """
    rows = (
        Validation.objects.filter(
            Q(assignment__hit__batch=batch)
            | Q(qa_pair__assignment__hit__batch=batch)
            | Q(qa_pair__gold_item__batch__parent=batch, qa_pair__gold_item__kind=GoldItem.Kind.GOLD),
            assignment__status__in=COUNTED,
        )
        .exclude(qa_pair__gold_item__kind=GoldItem.Kind.ATTENTION)
        .order_by("pk")
        .values_list("qa_pair_id", "assignment__worker__pseudonym", "flags")
    )
    return [Judgement(str(pair), worker, validation_label(flags or [])) for pair, worker, flags in rows]


def batch_gold(batch: Batch) -> dict[str, str]:
    """Known labels of the gold items served in ``batch`` or in its stage-2 batches, by QA pair id."""
    rows = GoldItem.objects.filter(Q(batch=batch) | Q(batch__parent=batch), kind=GoldItem.Kind.GOLD)
    return {
        str(pair): expected["label"]
        for pair, expected in rows.values_list("qa_pair_id", "expected")
        if isinstance(expected, dict) and isinstance(expected.get("label"), str)
    }


def act_by_skill(
    batch: Batch, action: str, threshold: float, min_labels: int, reason: str = ""
) -> dict[str, Any]:
    """Approve the submitted work of the workers whose skill is at or above ``threshold`` (``approve``),
    or block the workers under it (``block``), through the same services as one-by-one decisions
    (payments go through the ledger, blocks reach the platform).

    Skills come from this batch's aggregated validations (the default method); a worker with fewer than
    ``min_labels`` judgements is left alone. Every worker and submission left out is listed with why.

    Returns:
        ``{"action", "threshold", "done": [...], "skipped": [{"worker"/"assignment", "reason"}]}``
        (``done`` holds assignment ids for ``approve``, pseudonyms for ``block``).

    Raises:
        ValueError: an unknown action, a threshold outside 0..1, or a block without a reason.
    """
    from crowd.aggregation import DEFAULT_METHOD, aggregate
    from crowd.models import Worker
    from crowd.services.review import ReviewError, approve_assignment, block_worker

    if action not in ("approve", "block"):
        raise ValueError(f"unknown action {action!r}; choose approve or block")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the skill threshold must be between 0 and 1, not {threshold}")
    if action == "block" and not reason.strip():
        raise ValueError("a block needs a reason (it is kept with the worker)")
    result = aggregate(batch_judgements(batch), DEFAULT_METHOD, gold=batch_gold(batch), with_alpha=False)
    summary: dict[str, Any] = {"action": action, "threshold": threshold, "done": [], "skipped": []}
    for pseudonym, skill in sorted(result.workers.items()):
        if skill.n < min_labels or skill.skill is None:
            summary["skipped"].append({"worker": pseudonym, "reason": f"only {skill.n} judgement(s)"})
            continue
        worker = Worker.objects.get(pseudonym=pseudonym)
        if action == "block":
            if skill.skill >= threshold:
                continue
            if worker.blocked:
                summary["skipped"].append({"worker": pseudonym, "reason": "already blocked"})
                continue
            try:
                block_worker(worker, reason)
                summary["done"].append(pseudonym)
            except ReviewError as exc:
                summary["skipped"].append({"worker": pseudonym, "reason": str(exc)})
            continue
        if skill.skill < threshold:
            continue
        work = Assignment.objects.filter(
            hit__batch=batch, worker=worker, status=Assignment.Status.SUBMITTED
        ).select_related("hit__batch")
        for assignment in work:
            try:
                approve_assignment(assignment)
                summary["done"].append(assignment.pk)
            except (ReviewError, IllegalTransition) as exc:
                summary["skipped"].append({"assignment": assignment.pk, "reason": str(exc)})
    return summary
