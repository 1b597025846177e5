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

from annotation.importers import syllabusqa_csv
from exports.records import MCQRecord, QARecord, Record

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


class _KindTally:
    """The running facts about one extra field's non-null values that decide its kind."""

    __slots__ = ("all_bool", "all_int", "all_number", "container", "first_type")

    def __init__(self) -> None:
        self.all_bool = self.all_int = self.all_number = True
        self.container = False
        self.first_type: Optional[str] = None

    def add(self, value: Any) -> None:
        if value is None:
            return
        if self.first_type is None:
            self.first_type = type(value).__name__
        is_bool = isinstance(value, bool)
        self.all_bool = self.all_bool and is_bool
        self.all_int = self.all_int and isinstance(value, int) and not is_bool
        self.all_number = self.all_number and isinstance(value, (int, float)) and not is_bool
        self.container = self.container or isinstance(value, (list, tuple, dict))

    def kind(self, name: str) -> str:
        """Pick the column kind (string when mixed or when every value is null)."""
        if self.first_type is None:
            return STRING
        if self.all_bool:
            return BOOL
        if self.all_int:
            return INT
        if self.all_number:
            return FLOAT
        if self.container:
            raise FormatError(f"extra field {name!r}: values must be scalars, got {self.first_type}")
        return STRING


class ExtraFieldKinds:
    """Infers the kind of every extra field from records seen one at a time (a streamed release).

    A record without a field counts as a null value of it, as in :func:`extra_field_kinds`.
    """

    def __init__(self) -> None:
        self._tallies: dict[str, _KindTally] = {}
        self._records = 0

    def add(self, record: Record) -> None:
        """Count one record's extra fields."""
        for name, value in record.extra.items():
            tally = self._tallies.get(name)
            if tally is None:
                tally = self._tallies[name] = _KindTally()
            tally.add(value)
        self._records += 1

    def kinds(self) -> dict[str, str]:
        """Field name -> kind, sorted by name.

        Raises:
            FormatError: an extra field holds a list or dict.
        """
        return {name: self._tallies[name].kind(name) for name in sorted(self._tallies)}


def extra_field_kinds(records: Sequence[Record]) -> dict[str, str]:
    """Return the kind of every extra field found in ``records``, sorted by name.

    The release builder calls this once over all records, so every split has the same columns.

    Raises:
        FormatError: an extra field holds a list or dict.
    """
    tally = ExtraFieldKinds()
    for record in records:
        tally.add(record)
    return tally.kinds()


def _coerce(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == STRING and not isinstance(value, str):
        return str(value)
    if kind == FLOAT:
        return float(value)
    return value


class Formatter(ABC):
    """Turns records of one kind into rows of one table shape.

    :meth:`row` formats one record at a time (a streamed release writes each row as it is made);
    :meth:`format` builds a whole :class:`Table` from the same rows.
    """

    record_type: type = object
    base_kinds: Mapping[str, str] = {}

    def __init__(self, seed: int = 0, extra_kinds: Optional[Mapping[str, str]] = None) -> None:
        """Keep the settings every split of a release shares.

        Args:
            seed: seed for anything random in the format (option order).
            extra_kinds: the extra columns and their kinds; None infers them from the records given to
                :meth:`format` (:meth:`row` then writes no extra column).
        """
        self.seed = seed
        self.extra_kinds = extra_kinds

    def format(self, records: Sequence[Record]) -> Table:
        """Check the record type and build the table.

        Raises:
            FormatError: a record of the wrong kind, or a value that does not fit.
        """
        for record in records:
            self.check(record)
        extras = dict(self.extra_kinds) if self.extra_kinds is not None else extra_field_kinds(records)
        columns, kinds = self._schema(extras)
        rows = [row for row in (self._row(r, extras) for r in records) if row is not None]
        return Table(columns, kinds, rows, excluded=len(records) - len(rows))

    def check(self, record: Record) -> None:
        """Refuse a record of the wrong kind.

        Raises:
            FormatError: naming the record and both types.
        """
        if not isinstance(record, self.record_type):
            raise FormatError(
                f"{type(self).__name__}: record {getattr(record, 'id', '?')!r} is a "
                f"{type(record).__name__}, expected {self.record_type.__name__}"
            )

    def schema(self) -> tuple[tuple[str, ...], dict[str, str]]:
        """The columns (in output order) and their kinds, with this formatter's extra columns."""
        return self._schema(dict(self.extra_kinds or {}))

    def row(self, record: Record) -> Optional[dict[str, Any]]:
        """One record's row (every column of :meth:`schema`), or None when the format leaves it out.

        Raises:
            FormatError: a record of the wrong kind, or a value that does not fit.
        """
        self.check(record)
        return self._row(record, self.extra_kinds or {})

    def _schema(self, extras: Mapping[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
        clash = [n for n in extras if n in self.base_kinds]
        if clash:
            raise FormatError(f"extra field(s) {clash} clash with standard columns")
        return tuple(list(self.base_kinds) + list(extras)), {**self.base_kinds, **extras}

    def _row(self, record: Any, extras: Mapping[str, str]) -> Optional[dict[str, Any]]:
        row = self._base_row(record)
        if row is not None:
            for name, kind in extras.items():
                row[name] = _coerce(record.extra.get(name), kind)
        return row

    @abstractmethod
    def _base_row(self, record: Any) -> Optional[dict[str, Any]]:
        """The standard columns of a record already checked to be ``record_type`` (None: left out)."""


class SyllabusQACsvFormatter(Formatter):
    """The original SyllabusQA CSV schema, exactly: 15 string columns, empty cells as ''."""

    record_type = QARecord
    base_kinds = dict.fromkeys(syllabusqa_csv.COLUMNS, STRING)

    def _schema(self, extras: Mapping[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
        return syllabusqa_csv.COLUMNS, dict(self.base_kinds)  # the original schema holds no extra column

    def _row(self, record: Any, extras: Mapping[str, str]) -> Optional[dict[str, Any]]:
        return record.to_syllabusqa_row()

    def _base_row(self, record: QARecord) -> Optional[dict[str, Any]]:
        return record.to_syllabusqa_row()


class SyllabusQANestedFormatter(Formatter):
    """SyllabusQA records with span/step lists plus answer source, worker pseudonym and extras.

    This is the shape ``run_qc --input`` reads (``answer_spans``, ``reasoning_steps`` lists).
    """

    record_type = QARecord
    base_kinds = {
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

    def _base_row(self, r: QARecord) -> Optional[dict[str, Any]]:
        return {
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
    base_kinds = {
        "id": STRING,
        "document_id": STRING,
        "question": STRING,
        "options": STRING_LIST,
        "answer_key": STRING,
        "answer": STRING,
        "worker": STRING,
    }

    def _base_row(self, r: MCQRecord) -> Optional[dict[str, Any]]:
        options, correct = shuffled_options(r, self.seed)
        return {
            "id": r.id,
            "document_id": r.document_id,
            "question": r.question,
            "options": options,
            "answer_key": OPTION_LETTERS[correct],
            "answer": r.correct_answer,
            "worker": r.worker,
        }


_OPTION_COLUMNS = tuple(f"option_{letter.lower()}" for letter in OPTION_LETTERS)


class MultipleChoiceCsvFormatter(MultipleChoiceFormatter):
    """The multiple-choice version with one column per option (``option_a`` .. ``option_f``)."""

    def _schema(self, extras: Mapping[str, str]) -> tuple[tuple[str, ...], dict[str, str]]:
        nested_columns, nested_kinds = super()._schema(extras)
        columns: list[str] = []
        for name in nested_columns:
            columns.extend(_OPTION_COLUMNS if name == "options" else [name])
        kinds = {c: (STRING if c in _OPTION_COLUMNS else nested_kinds[c]) for c in columns}
        return tuple(columns), kinds

    def _row(self, record: Any, extras: Mapping[str, str]) -> Optional[dict[str, Any]]:
        nested = super()._row(record, extras)
        if nested is None:
            return None
        options = nested.pop("options")
        nested.update({c: (options[i] if i < len(options) else None) for i, c in enumerate(_OPTION_COLUMNS)})
        return nested


class DirectAnswerFormatter(Formatter):
    """SciQ's direct-answer version: passage, question and answer; items without a passage left out."""

    record_type = MCQRecord
    base_kinds = {
        "id": STRING,
        "document_id": STRING,
        "passage": STRING,
        "question": STRING,
        "answer": STRING,
        "worker": STRING,
    }

    def _base_row(self, r: MCQRecord) -> Optional[dict[str, Any]]:
        if not r.has_passage:
            return None
        return {
            "id": r.id,
            "document_id": r.document_id,
            "passage": r.support,
            "question": r.question,
            "answer": r.correct_answer,
            "worker": r.worker,
        }
