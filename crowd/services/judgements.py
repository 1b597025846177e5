"""Repeated judgements stored in the database, aggregated: SciQ stage-2 validations of a batch.

The aggregation itself is :mod:`crowd.aggregation` (crowd-kit, no Django); this module only reads the
validations a batch holds. Work that was rejected is left out (a researcher already judged it worthless);
submitted and approved work counts. Workers are named by pseudonym, never by platform id.
"""

from __future__ import annotations

from django.db.models import Q

from annotation.models import Assignment, Batch, GoldItem, QAPair, Validation
from crowd.aggregation import Judgement, validation_label

COUNTED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
"""Assignment states whose validations are aggregated."""


def batch_judgements(batch: Batch) -> list[Judgement]:
    """The stage-2 validations of ``batch``: those its HITs hold (a stage-2 batch) or those of the
    questions it collected (a stage-1 batch), with the answers to the gold items served in its stage 2.
    Items are QA pair ids, labels ``accept`` / ``reject``. Answers to attention items are no judgements
    (the question told the worker what to tick) and are left out.
    """
    # Each alternative is a condition on the validation's own row (its HIT's batch, joined anyway for
    # the worker, or its pair among a set read once): an OR across the pair's outer joins left PostgreSQL
    # no plan but nested loops over every join, minutes for a few hundred validations without statistics.
    collected = QAPair.objects.filter(assignment__hit__batch=batch).values("pk")
    gold = GoldItem.objects.filter(batch__parent=batch, kind=GoldItem.Kind.GOLD).values("qa_pair")
    attention = GoldItem.objects.filter(kind=GoldItem.Kind.ATTENTION).values("qa_pair")
    rows = (
        Validation.objects.filter(
            Q(assignment__hit__batch=batch) | Q(qa_pair__in=collected) | Q(qa_pair__in=gold),
            assignment__status__in=COUNTED,
        )
        .exclude(qa_pair__in=attention)
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
