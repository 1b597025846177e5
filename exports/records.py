"""Release records: the framework-free rows that the Django "dataset" step hands to the exporters.

A release is built from plain frozen dataclasses so that splitting, formatting, writing and the
dataset card never touch the database (doccano's dataset -> formatter -> writer pipeline). Two shapes
exist, one per collection pipeline:

* :class:`QARecord` - a SyllabusQA-style open QA pair grounded in one syllabus (``document_id``).
* :class:`MCQRecord` - a SciQ-style multiple-choice question grounded in one passage.

The SyllabusQA CSV schema (``annotation.importers.syllabusqa_csv.COLUMNS``) is the original release's, so
existing loaders work.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from annotation import question_types as qt
from annotation.importers.syllabusqa_csv import QARow

logger = logging.getLogger(__name__)

QUESTION_TYPES: tuple[str, ...] = qt.SYLLABUS_TYPES

# Answers are explicit (copied from the syllabus), implicit (need inference) or missing
# (SyllabusQA section 2.1); the one table is annotation.question_types.ANSWER_SOURCE.
ANSWER_SOURCES: Mapping[str, str] = {t: qt.ANSWER_SOURCE[t] for t in qt.SYLLABUS_TYPES}
ANSWER_SOURCE_ORDER: tuple[str, ...] = ("explicit", "implicit", "insufficient")

ExtraValue = Union[str, int, float, bool, None]


class RecordError(ValueError):
    """A record cannot be built from its input row; the message names the row, field and value."""


def _trim_trailing_empty(values: tuple[str, ...]) -> tuple[str, ...]:
    """Drop empty strings at the end only, so an interior empty slot keeps the later cells in place."""
    end = len(values)
    while end and values[end - 1] == "":
        end -= 1
    return values[:end]


@dataclass(frozen=True)
class QARecord:
    """One SyllabusQA-style QA pair.

    ``answer_spans`` and ``reasoning_steps`` are positional: slot *i* is ``answer_span_{i+1}``. An empty
    string marks an empty slot before a filled one (the original release has a few such rows), so a
    CSV round trip keeps every cell in place. Trailing empty slots are dropped.

    Attributes:
        id: stable item id (SyllabusQA uses 16 random alphanumerics).
        syllabus_name: the source document's name; the split groups on ``document_id``.
        question_type: one of :data:`QUESTION_TYPES` (not enforced: imported data may carry others).
        question: question text, verbatim (no stripping: round trips must be exact).
        answer: answer text, verbatim.
        answer_spans: up to 5 copied spans.
        reasoning_steps: up to 5 written steps.
        worker: a salted worker pseudonym (never a raw platform id), or None.
        document_id: the grouping key for splits; defaults to ``syllabus_name``.
        extra: further JSON-scalar fields written to JSONL / Parquet only (the CSV keeps the original
            schema), e.g. ``{"batch": 3}``.
    """

    id: str
    syllabus_name: str
    question_type: str
    question: str
    answer: str
    answer_spans: tuple[str, ...] = ()
    reasoning_steps: tuple[str, ...] = ()
    worker: Optional[str] = None
    document_id: str = ""
    extra: Mapping[str, ExtraValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise RecordError(f"QARecord for syllabus {self.syllabus_name!r}: empty id")
        spans = _trim_trailing_empty(tuple(self.answer_spans))
        steps = _trim_trailing_empty(tuple(self.reasoning_steps))
        if len(spans) > qt.MAX_SPANS:
            raise RecordError(f"QARecord {self.id}: {len(spans)} answer_spans, at most {qt.MAX_SPANS}")
        if len(steps) > qt.MAX_STEPS:
            raise RecordError(f"QARecord {self.id}: {len(steps)} reasoning_steps, at most {qt.MAX_STEPS}")
        object.__setattr__(self, "answer_spans", spans)
        object.__setattr__(self, "reasoning_steps", steps)
        if not self.document_id:
            object.__setattr__(self, "document_id", self.syllabus_name)

    @property
    def answer_source(self) -> Optional[str]:
        """Explicit / implicit / insufficient (SyllabusQA Table 6), or None for an unknown type."""
        return ANSWER_SOURCES.get(self.question_type)

    @property
    def stratum(self) -> str:
        """The label whose mix each split should keep (the question type)."""
        return self.question_type

    def to_syllabusqa_row(self) -> dict[str, str]:
        """Return the row in the original SyllabusQA CSV schema (empty cells are empty strings)."""
        row = {
            "id": self.id,
            "syllabus_name": self.syllabus_name,
            "question_type": self.question_type,
            "question": self.question,
            "answer": self.answer,
        }
        for i in range(qt.MAX_SPANS):
            row[f"answer_span_{i + 1}"] = self.answer_spans[i] if i < len(self.answer_spans) else ""
        for i in range(qt.MAX_STEPS):
            row[f"reasoning_step_{i + 1}"] = self.reasoning_steps[i] if i < len(self.reasoning_steps) else ""
        return row

    def content_dict(self) -> dict[str, Any]:
        """Return every released field as JSON-ready values (used for JSONL, Parquet and diffs)."""
        data: dict[str, Any] = {
            "id": self.id,
            "syllabus_name": self.syllabus_name,
            "question_type": self.question_type,
            "question": self.question,
            "answer": self.answer,
            "answer_spans": list(self.answer_spans),
            "reasoning_steps": list(self.reasoning_steps),
            "answer_source": self.answer_source,
            "worker": self.worker,
        }
        for key in sorted(self.extra):
            if key in data:
                raise RecordError(f"QARecord {self.id}: extra field {key!r} shadows a standard field")
            data[key] = self.extra[key]
        return data


def qa_record_from_qa_row(row: QARow) -> QARecord:
    """A :class:`QARecord` of one row of a SyllabusQA split file, values kept verbatim."""
    return QARecord(
        id=row.id,
        syllabus_name=row.syllabus_name,
        question_type=row.question_type,
        question=row.question,
        answer=row.answer,
        answer_spans=row.spans,
        reasoning_steps=row.steps,
    )


@dataclass(frozen=True)
class MCQRecord:
    """One SciQ-style multiple-choice question as crowdqa releases it (a source dataset's question, as
    read for import, is :class:`annotation.importers.mcq.MCQRow`).

    Attributes:
        id: stable item id.
        question: question text.
        correct_answer: the correct option.
        distractors: the wrong options (SciQ has 3).
        support: the passage the question was written from; "" when it cannot be released (the
            direct-answer version leaves such items out and counts them).
        document_id: the grouping key for splits (passage or source document id); defaults to ``id``
            so items without a passage are their own group.
        worker: a salted worker pseudonym, or None.
        extra: further JSON-scalar fields for JSONL / Parquet.
    """

    id: str
    question: str
    correct_answer: str
    distractors: tuple[str, ...] = ()
    support: str = ""
    document_id: str = ""
    worker: Optional[str] = None
    extra: Mapping[str, ExtraValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise RecordError(f"MCQRecord for question {self.question[:40]!r}: empty id")
        object.__setattr__(self, "distractors", tuple(self.distractors))
        if not self.document_id:
            object.__setattr__(self, "document_id", self.id)

    @property
    def stratum(self) -> str:
        """MCQ items carry no question type: one stratum."""
        return "mcq"

    @property
    def has_passage(self) -> bool:
        """True when the passage can go into the direct-answer version."""
        return bool(self.support.strip())

    def content_dict(self) -> dict[str, Any]:
        """Return every field as JSON-ready values (used for diffs)."""
        data: dict[str, Any] = {
            "id": self.id,
            "question": self.question,
            "correct_answer": self.correct_answer,
            "distractors": list(self.distractors),
            "support": self.support,
            "document_id": self.document_id,
            "worker": self.worker,
        }
        for key in sorted(self.extra):
            if key in data:
                raise RecordError(f"MCQRecord {self.id}: extra field {key!r} shadows a standard field")
            data[key] = self.extra[key]
        return data


Record = Union[QARecord, MCQRecord]


class RecordStream(ABC):
    """Release records read in chunks (from a database), in release order, any number of times.

    A release is built in two passes over its records (one to split, one to write), so records never
    have to be held in memory together. Records come sorted by id, or in the source's own order when
    the release keeps it (``keep_order``); :attr:`sorted_by_id` says which.
    """

    sorted_by_id: bool = True

    @abstractmethod
    def __iter__(self) -> Iterator[Record]:
        """Yield every record, in release order."""


def record_kind(records: Any) -> str:
    """Return ``"qa"`` or ``"mcq"`` for a non-empty homogeneous sequence of records.

    Raises:
        RecordError: the sequence is empty, mixed, or holds something else.
    """
    kinds = set()
    for record in records:
        if isinstance(record, QARecord):
            kinds.add("qa")
        elif isinstance(record, MCQRecord):
            kinds.add("mcq")
        else:
            raise RecordError(f"not a release record: {type(record).__name__}")
    if len(kinds) != 1:
        raise RecordError(f"a release needs records of one kind, got {sorted(kinds) or 'none'}")
    return kinds.pop()
