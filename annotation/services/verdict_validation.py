"""Which "fooled" verdicts of the model in the loop a second worker validates, and their HITs.

A batch with the model in the loop records a :class:`annotation.models.ModelCheck` per written pair.
Its "fooled" pairs (the model's answer did not match the writer's) are validated in a child batch of
the kind its handler names (``verdict_validation_kind``): one HIT per pair, showing the pair's syllabus,
so a HIT carries both ``qa_pair`` and ``document``. The child batch itself (provider, requirements,
publishing) is made by ``crowd.services.validation_hits.validate_fooled_verdicts``, as SciQ's stage 2.
"""

from __future__ import annotations

import logging
from typing import Optional

from django.db import transaction
from django.db.models import QuerySet

from annotation.models import HIT, Assignment, Batch, ModelCheck, QAPair

logger = logging.getLogger(__name__)

#: A pair waiting in a batch with one of these statuses is not offered to a new validation HIT.
LIVE = (Batch.Status.DRAFT, Batch.Status.PUBLISHED, Batch.Status.PAUSED, Batch.Status.COMPLETED)


def fooled_pairs(parent: Batch, kind: str) -> QuerySet[QAPair]:
    """The pairs of ``parent`` whose check says "fooled" and that no live batch of ``kind`` validates yet.

    Only submitted or approved work counts (a rejected assignment's pairs are not data), and only pairs
    with a syllabus (the validator reads it).
    """
    return (
        QAPair.objects.filter(
            assignment__hit__batch=parent,
            assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
            model_check__verdict=ModelCheck.Verdict.FOOLED,
            document__isnull=False,
        )
        .exclude(validation_hits__batch__kind=kind, validation_hits__batch__status__in=LIVE)
        .order_by("pk")
    )


def add_fooled_hits(batch: Batch, limit: Optional[int] = None) -> int:
    """Add one HIT to the validation ``batch`` per fooled pair of its parent not yet validated.

    The batch row is locked while the HITs are added, so two callers at the same time (a submission's
    job and the researcher's button) never give a pair two HITs. Returns the number of HITs added.

    Raises:
        ValueError: ``batch`` has no parent.
    """
    if batch.parent_id is None:
        raise ValueError(f"Batch({batch.pk}) validates no batch: it has no parent")
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).order_by("pk").first()
        pairs = fooled_pairs(batch.parent, batch.kind).exclude(validation_hits__batch=batch)
        if limit:
            pairs = pairs[:limit]
        last = batch.hits.order_by("-position").values_list("position", flat=True).first()
        start = 0 if last is None else last + 1
        hits = [
            HIT(
                batch=batch,
                qa_pair=pair,
                document_id=pair.document_id,
                position=start + i,
                max_assignments=batch.assignments_per_hit,
            )
            for i, pair in enumerate(pairs)
        ]
        HIT.objects.bulk_create(hits)
    if hits:
        logger.info("Batch(%s): %d model verdict validation HITs added", batch.pk, len(hits))
    return len(hits)
