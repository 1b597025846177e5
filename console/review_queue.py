"""The review queue: submitted work of every kind filtered by flag, batch, worker and question type.

Researchers work through it after QC has run on each submission (``crowd.followup_tasks.after_submission``);
decisions go to the crowd platform through ``crowd.services.review``. The queue lists submissions, not QA
pairs, so work that wrote no QA pair is there too: SciQ stage-2 validations (their flags, the chosen
suggestions and the written distractors), expert answers, and stage-1 HITs whose passages were all
rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from django.db.models import Prefetch, QuerySet

from annotation.models import Assignment, Distractor, GoldStanding, QAPair, Validation

MAX_ROWS = 500
VALIDATION = "validation"
"""The question-type filter value that selects SciQ stage-2 validations."""


@dataclass(frozen=True)
class QueueFilter:
    """What the researcher asked to see (every field optional).

    Attributes:
        batch: a batch id.
        flag: a QC code (docs/reference/codes.md) a pair must carry, or a validation flag
            (``Validation.Flag``).
        question_type: a question type ("sciq" for SciQ pairs, :data:`VALIDATION` for stage-2 validations).
        worker: a worker pseudonym.
        status: the assignment status (default: submitted, i.e. waiting for a decision).
    """

    batch: Optional[int] = None
    flag: str = ""
    question_type: str = ""
    worker: str = ""
    status: str = Assignment.Status.SUBMITTED

    @classmethod
    def from_params(cls, params: Any) -> QueueFilter:
        """Read the filter from GET parameters, ignoring malformed values."""
        batch = params.get("batch", "")
        status = params.get("status", Assignment.Status.SUBMITTED)
        return cls(
            batch=int(batch) if batch.isdecimal() and batch.isascii() else None,
            flag=params.get("flag", "").strip(),
            question_type=params.get("type", "").strip(),
            worker=params.get("worker", "").strip(),
            status=status
            if status in Assignment.Status.values or status == ""
            else Assignment.Status.SUBMITTED,
        )


@dataclass
class QueueItem:
    """One submission in the queue with what it contains.

    Attributes:
        assignment: the submission (worker, HIT and batch loaded).
        pairs: its QA pairs (those of the type filter only, when one is set).
        validation: a stage-2 validation, with ``chosen`` (the suggestions picked) and ``written``
            (distractors the validator wrote).
        expert_answer: an expert's answer.
        gold_answer: the graded answer, when the HIT served a gold or attention item.
        standing: the worker's ``GoldStanding`` on the batch when it is warned or blocked.
    """

    assignment: Assignment
    pairs: list[QAPair] = field(default_factory=list)
    validation: Optional[Validation] = None
    chosen: list[Distractor] = field(default_factory=list)
    written: list[Distractor] = field(default_factory=list)
    expert_answer: Any = None
    gold_answer: Any = None
    standing: Any = None

    def matches_flag(self, flag: str) -> bool:
        """True when a pair or the validation carries ``flag``."""
        if self.validation is not None and flag in (self.validation.flags or []):
            return True
        return any(flag in (pair.qc_flags or []) for pair in self.pairs)


def queue(flt: QueueFilter) -> list[QueueItem]:
    """Submissions matching ``flt``, newest first (at most MAX_ROWS).

    The flag filter runs in Python: JSON-list containment is not portable across SQLite and PostgreSQL.
    """
    assignments = _matching(flt)
    out: list[QueueItem] = []
    for start in range(0, 100 * MAX_ROWS, MAX_ROWS):
        chunk = list(assignments[start : start + MAX_ROWS])
        if not chunk:
            break
        for item in _items(chunk):
            if flt.flag and not item.matches_flag(flt.flag):
                continue
            out.append(item)
            if len(out) >= MAX_ROWS:
                return out
    return out


def _matching(flt: QueueFilter) -> QuerySet[Assignment]:
    """The submissions ``flt`` selects in SQL (all but the flag), newest first, with what a row shows."""
    pairs = QAPair.objects.select_related("document", "passage").prefetch_related("spans", "steps")
    assignments = Assignment.objects.select_related(
        "worker",
        "hit__batch",
        "hit__document",
        "hit__qa_pair",
        "validation__qa_pair",
        "expert_answer",
        "gold_answer__item",
    )
    if flt.question_type == VALIDATION:
        assignments = assignments.filter(validation__isnull=False)
    elif flt.question_type:
        assignments = assignments.filter(qa_pairs__question_type=flt.question_type).distinct()
        pairs = pairs.filter(question_type=flt.question_type)
    if flt.status:
        assignments = assignments.filter(status=flt.status)
    else:
        assignments = assignments.exclude(submitted_at__isnull=True)
    if flt.batch is not None:
        assignments = assignments.filter(hit__batch=flt.batch)
    if flt.worker:
        assignments = assignments.filter(worker__pseudonym=flt.worker)
    return assignments.prefetch_related(
        Prefetch("qa_pairs", queryset=pairs.order_by("position"), to_attr="queue_pairs")
    ).order_by("-submitted_at", "-pk")


def _items(chunk: list[Assignment]) -> list[QueueItem]:
    """The queue rows of a chunk of submissions: their distractors and gold standings read in two queries."""
    validations = [a.validation for a in chunk if _related(a, "validation") is not None]
    by_validation: dict[int, list[Distractor]] = {}
    for distractor in Distractor.objects.filter(validation__in=validations).order_by("origin", "position"):
        by_validation.setdefault(distractor.validation_id, []).append(distractor)
    flagged = {
        (s.batch_id, s.worker_id): s
        for s in GoldStanding.objects.filter(
            batch__in={a.hit.batch_id for a in chunk}, worker__in={a.worker_id for a in chunk}
        ).exclude(state=GoldStanding.State.OK)
    }
    items = []
    for assignment in chunk:
        validation = _related(assignment, "validation")
        mine = by_validation.get(validation.pk, []) if validation is not None else []
        items.append(
            QueueItem(
                assignment=assignment,
                pairs=list(assignment.queue_pairs),
                validation=validation,
                chosen=[d for d in mine if d.origin != Distractor.Origin.WORKER],
                written=[d for d in mine if d.origin == Distractor.Origin.WORKER],
                expert_answer=_related(assignment, "expert_answer"),
                gold_answer=_related(assignment, "gold_answer"),
                standing=flagged.get((assignment.hit.batch_id, assignment.worker_id)),
            )
        )
    return items


def _related(assignment: Assignment, name: str) -> Any:
    """A reverse one-to-one of ``assignment`` or None (without raising RelatedObjectDoesNotExist)."""
    try:
        return getattr(assignment, name)
    except Exception:  # noqa: BLE001 - Django raises a per-relation DoesNotExist subclass
        return None


def queue_pairs(flt: QueueFilter) -> list[QAPair]:
    """The QA pairs of the queue's submissions that match ``flt`` (newest submission first)."""
    return [
        pair
        for item in queue(flt)
        for pair in item.pairs
        if not flt.flag or flt.flag in (pair.qc_flags or [])
    ]
