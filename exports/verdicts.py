"""Which validated questions enter a release: the aggregated verdict of their stage-2 validations.

Split from :mod:`exports.dataset` (which selects the pairs) because it reads the validations and the gold
items served among them, not the pairs themselves.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.models import Assignment, QAPair
from exports.dataset import _plain

NO_AGGREGATION = "none"
"""The ``aggregation`` value that keeps every validated question (each validation counted alone)."""


def aggregated_validations(pairs: QuerySet[QAPair], method: str) -> tuple[QuerySet[QAPair], dict[str, Any]]:
    """Leave out the questions whose stage-2 validators, aggregated, reject them.

    A SciQ question validated by k workers gets one verdict from all k judgements (``method``:
    majority vote, Dawid-Skene or MACE through crowd-kit, see :mod:`crowd.aggregation`), so a careful
    validator's flag is not outvoted by a spammer's "fine", nor is a question decided by whichever
    validator came last. Validations of rejected work do not count.

    Args:
        pairs: the selection.
        method: an aggregation method, or :data:`NO_AGGREGATION` to keep the selection as it is.

    Returns:
        The selection without the rejected questions, and the facts for the card and the manifest
        (``method``, ``validated``, ``left_out``, ``labels``, ``alpha_per_batch``); empty facts when no
        question of the selection was validated.
    """
    from annotation.models import Validation
    from crowd.aggregation import REJECT, Judgement, aggregate, krippendorff_alpha, validation_label

    if method == NO_AGGREGATION:
        return pairs, {}
    rows = (
        Validation.objects.filter(
            qa_pair__in=_plain(pairs).values("pk"),
            assignment__status__in=(Assignment.Status.SUBMITTED, Assignment.Status.APPROVED),
        )
        .order_by("pk")
        .values_list("qa_pair_id", "assignment__worker__pseudonym", "flags", "assignment__hit__batch_id")
    )
    judgements: list[Judgement] = []
    per_batch: dict[int, list[Judgement]] = {}
    for pair_id, worker, flags, batch_id in rows.iterator(10_000):
        judgement = Judgement(str(pair_id), worker, validation_label(flags or []))
        judgements.append(judgement)
        per_batch.setdefault(batch_id, []).append(judgement)
    if not judgements:
        return pairs, {}
    gold = _served_gold(per_batch, judgements)
    result = aggregate(judgements, method, gold=gold, with_alpha=False)
    questions = {item: v for item, v in result.items.items() if item not in gold}
    rejected = sorted(int(item) for item, verdict in questions.items() if verdict.label == REJECT)
    info = {
        "method": method,
        "validated": len(questions),
        "left_out": len(rejected),
        "labels": result.labels,
        "alpha_per_batch": {str(b): krippendorff_alpha(found) for b, found in sorted(per_batch.items())},
        **({"gold_items": len(gold)} if gold else {}),
    }
    return (pairs.exclude(pk__in=rejected) if rejected else pairs), info


def _served_gold(per_batch: dict[int, list[Any]], judgements: list[Any]) -> dict[str, str]:
    """Add to ``judgements`` the answers to the gold items served in the validating batches, and return
    their known labels: the aggregation fits each validator's reliability with them fixed, so the
    verdicts of the real questions rest on what each validator got right where the truth is known."""
    from annotation.models import GoldItem, Validation
    from crowd.aggregation import Judgement, validation_label

    rows = Validation.objects.filter(
        qa_pair__gold_item__batch_id__in=list(per_batch),
        qa_pair__gold_item__kind=GoldItem.Kind.GOLD,
        assignment__status__in=(Assignment.Status.SUBMITTED, Assignment.Status.APPROVED),
    ).values_list("qa_pair_id", "assignment__worker__pseudonym", "flags", "qa_pair__gold_item__expected")
    gold: dict[str, str] = {}
    for pair_id, worker, flags, expected in rows.order_by("pk"):
        if not isinstance(expected, dict) or not isinstance(expected.get("label"), str):
            continue
        judgements.append(Judgement(str(pair_id), worker, validation_label(flags or [])))
        gold[str(pair_id)] = expected["label"]
    return gold
