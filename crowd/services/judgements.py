"""Repeated judgements stored in the database, aggregated: SciQ stage-2 validations of a batch.

The aggregation itself is :mod:`crowd.aggregation` (crowd-kit, no Django); this module only reads the
validations a batch holds. Work that was rejected is left out (a researcher already judged it worthless);
submitted and approved work counts. Workers are named by pseudonym, never by platform id.
"""

from __future__ import annotations

from django.db.models import Q

from annotation.models import Assignment, Batch, Validation
from crowd.aggregation import Judgement, validation_label

COUNTED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
"""Assignment states whose validations are aggregated."""


def batch_judgements(batch: Batch) -> list[Judgement]:
    """The stage-2 validations of ``batch``: those its HITs hold (a stage-2 batch) or those of the
    questions it collected (a stage-1 batch). Items are QA pair ids, labels ``accept`` / ``reject``.
    """
    rows = (
        Validation.objects.filter(
            Q(assignment__hit__batch=batch) | Q(qa_pair__assignment__hit__batch=batch),
            assignment__status__in=COUNTED,
        )
        .order_by("pk")
        .values_list("qa_pair_id", "assignment__worker__pseudonym", "flags")
    )
    return [Judgement(str(pair), worker, validation_label(flags or [])) for pair, worker, flags in rows]
