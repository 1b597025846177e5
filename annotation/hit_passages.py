"""A HIT's passages in id order, as every page and submission of a passage HIT reads them.

Read on their own (:func:`offered`), or by the signed link's read in the same round trip to the database
(``worker.hit_links.assignment_for(token, passages=True)``), which leaves them on the HIT instance it
returns (:func:`keep`), as ``prefetch_related`` with ``to_attr`` would: a SciQ page or submission then
costs one round trip fewer. Kept passages are as they were when the link was read, at the start of the
request; what decides who takes a passage is the conditional UPDATE of the submission
(:func:`annotation.hits.sciq_question.take_passage`), never this read.
"""

from __future__ import annotations

from annotation.models import HIT, Assignment, Passage
from annotation.sql_reads import SqlRead

_LINK = f'"{HIT.passages.through._meta.db_table}"'

BY_HIT = SqlRead(
    Passage,
    joins=f'INNER JOIN {_LINK} hp ON hp."passage_id" = {{self}}."id"',
    where='hp."hit_id" = %s',
    order_by='{self}."id"',
)
"""``Passage.objects.filter(hits=hit_id).order_by("pk")``, written once (:mod:`annotation.sql_reads`)."""

BY_ASSIGNMENT = SqlRead(
    Passage,
    joins=(
        f'INNER JOIN {_LINK} hp ON hp."passage_id" = {{self}}."id" '
        f'INNER JOIN "{Assignment._meta.db_table}" a ON a."hit_id" = hp."hit_id"'
    ),
    where='a."id" = %s',
    order_by='{self}."id"',
)
"""``Passage.objects.filter(hits__assignments=assignment_id).order_by("pk")``: the passages of an
assignment's HIT, which the signed link's read asks for by the assignment id it has."""

#: The attribute of a HIT instance that holds the passages read with it.
_KEPT = "passages_read_with_link"


def keep(hit: HIT, passages: list[Passage]) -> None:
    """Leave ``passages`` (the HIT's, in id order, read with it) on ``hit`` for :func:`offered`."""
    setattr(hit, _KEPT, passages)


def offered(hit: HIT) -> list[Passage]:
    """The HIT's passages in id order: those read with it when there are, else read now."""
    kept = getattr(hit, _KEPT, None)
    return list(kept) if kept is not None else BY_HIT.all(hit.pk)
