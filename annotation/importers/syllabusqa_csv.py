"""The SyllabusQA split CSVs (``train.csv``, ``val.csv``, ``test.csv``), read into typed rows.

The published release (``data/dataset_split/``, papers/syllabusqa.txt) and crowdqa's own releases
(exports/original_formats.py) share one layout: 15 UTF-8 columns, ``id, syllabus_name, question_type,
question, answer, answer_span_1..5, reasoning_step_1..5``. Cells may hold newlines, so a row's line number
is the line it starts on, not its position. The importer, the QC filters, the benchmark readers and the
benchmark scripts all read these files here, so they see the same rows; no Django is imported.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from annotation import question_types as qt
from annotation.importers.errors import ImportDataError

#: The columns every reader needs; a benchmark release may leave out the span and step columns.
QA_COLUMNS: tuple[str, ...] = ("id", "syllabus_name", "question_type", "question", "answer")
SPAN_COLUMNS: tuple[str, ...] = tuple(f"answer_span_{i}" for i in range(1, qt.MAX_SPANS + 1))
STEP_COLUMNS: tuple[str, ...] = tuple(f"reasoning_step_{i}" for i in range(1, qt.MAX_STEPS + 1))
#: The released layout, in file order.
COLUMNS: tuple[str, ...] = QA_COLUMNS + SPAN_COLUMNS + STEP_COLUMNS


@dataclass(frozen=True)
class QARow:
    """One row of a SyllabusQA split file, exactly as released (no whitespace stripped but the id's).

    Attributes:
        id: the pair's id (an identifier: surrounding whitespace is dropped).
        split: the file's name without ``.csv`` (``train``, ``val`` or ``test``).
        syllabus_name, question_type, question, answer: the cells, verbatim ("" for an empty cell).
        spans: ``answer_span_1..5`` by position, trailing empty cells dropped; an empty cell before a
            filled one stays as "" so every span keeps its column and a release round-trips exactly.
        steps: ``reasoning_step_1..5``, the same way.
        path: the file the row was read from.
        line: the line of ``path`` the row starts on.
    """

    id: str
    split: str
    syllabus_name: str
    question_type: str
    question: str
    answer: str
    spans: tuple[str, ...]
    steps: tuple[str, ...]
    path: Path
    line: int

    @property
    def source(self) -> str:
        """Where the row is, for messages: ``train.csv line 42``."""
        return f"{self.path.name} line {self.line}"


def _slots(values: Iterable[Optional[str]]) -> tuple[str, ...]:
    """Cell values by position with trailing empty cells dropped (a missing cell reads as "")."""
    cells = [value or "" for value in values]
    while cells and not cells[-1]:
        cells.pop()
    return tuple(cells)


def _row(cells: Mapping[str, Optional[str]], path: Path, line: int) -> QARow:
    return QARow(
        id=(cells.get("id") or "").strip(),
        split=path.stem,
        syllabus_name=cells.get("syllabus_name") or "",
        question_type=cells.get("question_type") or "",
        question=cells.get("question") or "",
        answer=cells.get("answer") or "",
        spans=_slots(cells.get(column) for column in SPAN_COLUMNS),
        steps=_slots(cells.get(column) for column in STEP_COLUMNS),
        path=path,
        line=line,
    )


def read_split_csv(path: Path, *, columns: Sequence[str] = COLUMNS) -> list[QARow]:
    """Every row of one split file, in file order. A short row's missing cells read as "".

    Args:
        path: the CSV file; its name without ``.csv`` is each row's ``split``.
        columns: the columns the header must have (all 15 unless a caller reads fewer).

    Raises:
        ImportDataError: a missing file, a file that is not UTF-8 (names the line), a missing column,
            or malformed CSV (names the line).
    """
    if not path.is_file():
        raise ImportDataError(path, "file not found")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ImportDataError(path, f"not UTF-8 (byte 0x{data[error.start]:02x})", line=line) from error
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[QARow] = []
    start = 1  # the line the record being read starts on
    try:
        missing = [column for column in columns if column not in (reader.fieldnames or [])]
        if missing:
            raise ImportDataError(path, f"missing column(s) {', '.join(missing)}", line=1)
        start = reader.line_num + 1
        for cells in reader:
            rows.append(_row(cells, path, start))
            start = reader.line_num + 1
    except csv.Error as error:
        raise ImportDataError(path, f"malformed CSV ({error})", line=start) from error
    return rows


def _check_row(row: QARow, seen: dict[str, str]) -> None:
    """Refuse a row the importer cannot store; ``seen`` maps the ids read so far to where they were.

    Raises:
        ImportDataError: an empty id, an id already in ``seen``, an unknown question type, or an empty
            question or syllabus name (names the file and line).
    """
    if not row.id:
        raise ImportDataError(row.path, "empty id", line=row.line)
    if row.id in seen:
        raise ImportDataError(row.path, f"id '{row.id}' already used at {seen[row.id]}", line=row.line)
    seen[row.id] = row.source
    if row.question_type not in qt.SYLLABUS_TYPES:
        raise ImportDataError(
            row.path,
            f"unknown question type '{row.question_type}' (expected one of: {', '.join(qt.SYLLABUS_TYPES)})",
            row.line,
        )
    if not row.question.strip():
        raise ImportDataError(row.path, f"empty question for id '{row.id}'", line=row.line)
    if not row.syllabus_name.strip():
        raise ImportDataError(row.path, f"empty syllabus_name for id '{row.id}'", line=row.line)


def split_dir(root: Path) -> Path:
    """The folder of the split files in a SyllabusQA release folder (``data/dataset_split/``).

    Raises:
        ImportDataError: ``root`` has no such folder.
    """
    for candidate in (root / "data" / "dataset_split", root / "dataset_split"):
        if candidate.is_dir():
            return candidate
    raise ImportDataError(root, "no data/dataset_split/ folder (expected the SyllabusQA release layout)")


def read_qa_rows(root: Path) -> list[QARow]:
    """Read and check every QA row of the three split files of a release folder, train first.

    Raises:
        ImportDataError: for a missing folder, file or column, a file that is not UTF-8, or a row
            :func:`_check_row` refuses (ids must be unique across the three files).
    """
    folder = split_dir(root)
    rows: list[QARow] = []
    seen: dict[str, str] = {}
    for split in qt.SPLITS:
        for row in read_split_csv(folder / f"{split}.csv"):
            _check_row(row, seen)
            rows.append(row)
    return rows
