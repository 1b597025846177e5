"""Formatters: release records -> a column table shaped for one dataset version and file format.

Each formatter is a small class whose :meth:`Formatter.format` turns records into a :class:`Table`
(ordered columns, typed, rows as dicts). Writers then serialize tables and know nothing about
records. Which formatter serves which (version, format) pair is decided in one table in
``exports/factories.py``.
"""

from __future__ import annotations

import logging
import random
import string
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from exports.records import SYLLABUSQA_COLUMNS, MCQRecord, QARecord, Record

logger = logging.getLogger(__name__)

# Column kinds a writer must support.
STRING = "string"
STRING_LIST = "string_list"
INT = "int"
FLOAT = "float"
BOOL = "bool"

MAX_OPTIONS = 6  # 1 correct answer + up to 5 distractors (2 chosen suggestions + 3 written)
OPTION_LETTERS = string.ascii_uppercase[:MAX_OPTIONS]


class FormatError(ValueError):
    """A record does not fit the requested format; the message names the record and field."""


@dataclass(frozen=True)
class Table:
    """Rows ready for a writer.

    Attributes:
        columns: column names in output order.
        kinds: column -> one of ``string``, ``string_list``, ``int``, ``float``, ``bool``.
        rows: one dict per row (every column present; ``None`` is an empty/null cell).
        excluded: records the formatter left out (direct-answer items without a passage).
    """

    columns: tuple[str, ...]
    kinds: Mapping[str, str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    excluded: int = 0


def _infer_kind(name: str, values: Sequence[Any]) -> str:
    """Pick a column kind for an extra field from its non-null values (string when mixed)."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return BOOL
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return INT
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return FLOAT
    if any(isinstance(v, (list, tuple, dict)) for v in present):
        raise FormatError(f"extra field {name!r}: values must be scalars, got {type(present[0]).__name__}")
    return STRING


def extra_field_kinds(records: Sequence[Record]) -> dict[str, str]:
    """Return the kind of every extra field found in ``records``, sorted by name.

    The release builder calls this once over all records, so every split has the same columns.

    Raises:
        FormatError: an extra field holds a list or dict.
    """
    names = sorted({key for r in records for key in r.extra})
    return {name: _infer_kind(name, [r.extra.get(name) for r in records]) for name in names}


def _coerce(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == STRING and not isinstance(value, str):
        return str(value)
    if kind == FLOAT:
        return float(value)
    return value


class Formatter(ABC):
    """Turns records of one kind into a :class:`Table`."""

    record_type: type = object

    def __init__(self, seed: int = 0, extra_kinds: Optional[Mapping[str, str]] = None) -> None:
        """Keep the settings every split of a release shares.

        Args:
            seed: seed for anything random in the format (option order).
            extra_kinds: the extra columns and their kinds; None infers them from the records given.
        """
        self.seed = seed
        self.extra_kinds = extra_kinds

    def format(self, records: Sequence[Record]) -> Table:
        """Check the record type and build the table.

        Raises:
            FormatError: a record of the wrong kind, or a value that does not fit.
        """
        for record in records:
            if not isinstance(record, self.record_type):
                raise FormatError(
                    f"{type(self).__name__}: record {getattr(record, 'id', '?')!r} is a "
                    f"{type(record).__name__}, expected {self.record_type.__name__}"
                )
        return self._format(records)

    @abstractmethod
    def _format(self, records: Sequence[Any]) -> Table:
        """Build the table from records already checked to be ``record_type``."""


def _with_extras(
    records: Sequence[Record],
    base_columns: list[str],
    base_kinds: dict[str, str],
    base_rows: list[dict[str, Any]],
    extra_kinds: Optional[Mapping[str, str]],
) -> Table:
    """Append the extra fields (sorted by name, typed) to rows built from standard fields."""
    kinds = dict(extra_kinds) if extra_kinds is not None else extra_field_kinds(records)
    names = list(kinds)
    clash = [n for n in names if n in base_kinds]
    if clash:
        raise FormatError(f"extra field(s) {clash} clash with standard columns")
    for record, row in zip(records, base_rows, strict=False):
        for name in names:
            row[name] = _coerce(record.extra.get(name), kinds[name])
    return Table(tuple(base_columns + names), {**base_kinds, **kinds}, base_rows)


class SyllabusQACsvFormatter(Formatter):
    """The original SyllabusQA CSV schema, exactly: 15 string columns, empty cells as ''."""

    record_type = QARecord

    def _format(self, records: Sequence[QARecord]) -> Table:
        rows = [r.to_syllabusqa_row() for r in records]
        return Table(SYLLABUSQA_COLUMNS, dict.fromkeys(SYLLABUSQA_COLUMNS, STRING), rows)


class SyllabusQANestedFormatter(Formatter):
    """SyllabusQA records with span/step lists plus answer source, worker pseudonym and extras.

    This is the shape ``run_qc --input`` reads (``answer_spans``, ``reasoning_steps`` lists).
    """

    record_type = QARecord

    def _format(self, records: Sequence[QARecord]) -> Table:
        kinds = {
            "id": STRING,
            "syllabus_name": STRING,
            "question_type": STRING,
            "question": STRING,
            "answer": STRING,
            "answer_spans": STRING_LIST,
            "reasoning_steps": STRING_LIST,
            "answer_source": STRING,
            "worker": STRING,
        }
        rows = [
            {
                "id": r.id,
                "syllabus_name": r.syllabus_name,
                "question_type": r.question_type,
                "question": r.question,
                "answer": r.answer,
                "answer_spans": list(r.answer_spans),
                "reasoning_steps": list(r.reasoning_steps),
                "answer_source": r.answer_source,
                "worker": r.worker,
            }
            for r in records
        ]
        return _with_extras(records, list(kinds), kinds, rows, self.extra_kinds)


def shuffled_options(record: MCQRecord, seed: int) -> tuple[list[str], int]:
    """Return the options in a seeded order and the index of the correct one.

    The order depends only on the seed and the item id (``random.Random`` hashes a str seed with
    SHA-512), so it is the same whatever the other items or their order.

    A distractor equal to the answer is kept as it is (the original SciQ has 13 such items; QC flags them
    as ``distractor_equals_answer``) and logged; the key points at the answer's own slot.

    Raises:
        FormatError: more than :data:`MAX_OPTIONS` options.
    """
    options = [record.correct_answer, *record.distractors]
    if len(options) > MAX_OPTIONS:
        raise FormatError(f"MCQRecord {record.id}: {len(options)} options, at most {MAX_OPTIONS}")
    if record.correct_answer in record.distractors:
        logger.warning("MCQRecord(%s): a distractor equals the answer %r", record.id, record.correct_answer)
    order = list(range(len(options)))
    random.Random(f"{seed}:{record.id}").shuffle(order)
    return [options[i] for i in order], order.index(0)


class MultipleChoiceFormatter(Formatter):
    """SciQ's multiple-choice version: no passage, options shuffled with the seed, an answer key."""

    record_type = MCQRecord

    def _format(self, records: Sequence[MCQRecord]) -> Table:
        kinds = {
            "id": STRING,
            "document_id": STRING,
            "question": STRING,
            "options": STRING_LIST,
            "answer_key": STRING,
            "answer": STRING,
            "worker": STRING,
        }
        rows = []
        for r in records:
            options, correct = shuffled_options(r, self.seed)
            rows.append(
                {
                    "id": r.id,
                    "document_id": r.document_id,
                    "question": r.question,
                    "options": options,
                    "answer_key": OPTION_LETTERS[correct],
                    "answer": r.correct_answer,
                    "worker": r.worker,
                }
            )
        return _with_extras(records, list(kinds), kinds, rows, self.extra_kinds)


class MultipleChoiceCsvFormatter(MultipleChoiceFormatter):
    """The multiple-choice version with one column per option (``option_a`` .. ``option_f``)."""

    def _format(self, records: Sequence[MCQRecord]) -> Table:
        nested = super()._format(records)
        option_columns = [f"option_{letter.lower()}" for letter in OPTION_LETTERS]
        columns: list[str] = []
        for name in nested.columns:
            columns.extend(option_columns if name == "options" else [name])
        kinds = {c: (STRING if c in option_columns else nested.kinds[c]) for c in columns}
        rows = []
        for row in nested.rows:
            options = row.pop("options")
            flat = {c: (options[i] if i < len(options) else None) for i, c in enumerate(option_columns)}
            rows.append({c: (flat[c] if c in flat else row[c]) for c in columns})
        return Table(tuple(columns), kinds, rows)


class DirectAnswerFormatter(Formatter):
    """SciQ's direct-answer version: passage, question and answer; items without a passage left out."""

    record_type = MCQRecord

    def _format(self, records: Sequence[MCQRecord]) -> Table:
        kept = [r for r in records if r.has_passage]
        kinds = {
            "id": STRING,
            "document_id": STRING,
            "passage": STRING,
            "question": STRING,
            "answer": STRING,
            "worker": STRING,
        }
        rows = [
            {
                "id": r.id,
                "document_id": r.document_id,
                "passage": r.support,
                "question": r.question,
                "answer": r.correct_answer,
                "worker": r.worker,
            }
            for r in kept
        ]
        table = _with_extras(kept, list(kinds), kinds, rows, self.extra_kinds)
        return Table(table.columns, table.kinds, table.rows, excluded=len(records) - len(kept))
