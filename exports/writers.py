"""Writers: serialize a formatter's :class:`~exports.formatters.Table` to one file format.

Writers never import Django and never see records. Each one writes deterministically (same rows,
same bytes), so re-exporting a release with the same inputs and seed gives byte-identical files.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from exports.formatters import BOOL, FLOAT, INT, STRING, STRING_LIST, Table

logger = logging.getLogger(__name__)


class WriterError(ValueError):
    """A table cannot be written in this format; the message names the file, row and column."""


class RowSink(ABC):
    """An open file of one format that takes rows one at a time (a streamed release writes each row as
    it is made, so memory does not grow with the release)."""

    rows = 0

    @abstractmethod
    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row (every column present; None is an empty/null cell).

        Raises:
            WriterError: a value does not fit the format.
        """

    @abstractmethod
    def close(self) -> int:
        """Finish the file and return the number of data rows written."""


class Writer(ABC):
    """Writes rows of one table shape to one file."""

    extension: str = ""

    @abstractmethod
    def open(self, path: Path, columns: Sequence[str], kinds: Mapping[str, str]) -> RowSink:
        """Create ``path`` for rows with ``columns`` of ``kinds``.

        Raises:
            WriterError: a column kind the format cannot hold.
        """

    def write(self, table: Table, path: Path) -> int:
        """Write ``table`` to ``path`` and return the number of data rows written.

        Raises:
            WriterError: a value does not fit the format.
        """
        sink = self.open(path, table.columns, table.kinds)
        try:
            for row in table.rows:
                sink.write(row)
        finally:
            rows = sink.close()
        return rows


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")


def neutralise_formula(value: Any) -> Any:
    """A CSV cell a spreadsheet would run as a formula, made inert with a leading ``'``.

    Risky cells start (after spaces, tabs and line breaks) with ``=``, ``+`` or ``@``, or with ``-``
    directly followed by something other than a space or another ``-`` (``-2+3``, ``-HYPERLINK(...)``);
    negative numbers and text such as "- Wear masks" or "-- Spring Break --" stay as they are, so
    published rows without formulas are written byte for byte.
    """
    if not isinstance(value, str) or not value:
        return value
    head = value.lstrip(" \t\r\n")
    if not head:
        return value
    risky = head[0] in "=+@" or (
        head[0] == "-" and len(head) > 1 and head[1] not in " -\t\r\n" and not _NUMBER.fullmatch(head)
    )
    return "'" + value if risky else value


class _CsvSink(RowSink):
    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        self.columns = tuple(columns)
        self.handle = path.open("w", encoding="utf-8", newline="")
        self.writer = csv.writer(self.handle, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        self.writer.writerow(self.columns)

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow(["" if row[c] is None else neutralise_formula(row[c]) for c in self.columns])
        self.rows += 1

    def close(self) -> int:
        self.handle.close()
        return self.rows


class CsvWriter(Writer):
    """RFC 4180-style CSV as the original SyllabusQA files: UTF-8, ``\\n`` line ends, minimal quoting.

    Python's ``csv`` module with ``lineterminator="\\n"`` reproduces the original train/val/test.csv byte
    for byte; empty and null cells are written as nothing between commas. Cells a spreadsheet would run
    as a formula are neutralised (:func:`neutralise_formula`).
    """

    extension = "csv"

    def open(self, path: Path, columns: Sequence[str], kinds: Mapping[str, str]) -> RowSink:
        list_columns = [c for c in columns if kinds.get(c) == STRING_LIST]
        if list_columns:
            raise WriterError(f"{path.name}: CSV cannot hold list column(s) {list_columns}")
        return _CsvSink(path, columns)


class _JsonlSink(RowSink):
    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        self.path = path
        self.columns = tuple(columns)
        self.handle = path.open("w", encoding="utf-8", newline="\n")

    def write(self, row: Mapping[str, Any]) -> None:
        try:
            line = json.dumps({c: row[c] for c in self.columns}, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise WriterError(f"{self.path.name} row {self.rows + 1} (id {row.get('id')!r}): {e}") from e
        self.handle.write(line + "\n")
        self.rows += 1

    def close(self) -> int:
        self.handle.close()
        return self.rows


class JsonlWriter(Writer):
    """One JSON object per line, keys in column order, UTF-8 without escaping non-ASCII."""

    extension = "jsonl"

    def open(self, path: Path, columns: Sequence[str], kinds: Mapping[str, str]) -> RowSink:
        return _JsonlSink(path, columns)


_ARROW_TYPES = {
    STRING: pa.string(),
    STRING_LIST: pa.list_(pa.string()),
    INT: pa.int64(),
    FLOAT: pa.float64(),
    BOOL: pa.bool_(),
}

ROW_GROUP_ROWS = 20_000
"""Rows buffered per Parquet row group: memory stays bounded, and a split of at most this many rows is
written as one row group, as ``pyarrow.parquet.write_table`` writes it."""


class _ParquetSink(RowSink):
    def __init__(self, path: Path, schema: pa.Schema, row_group_rows: int) -> None:
        self.path = path
        self.schema = schema
        self.row_group_rows = row_group_rows
        self.buffer: list[dict[str, Any]] = []
        self.writer = pq.ParquetWriter(path, schema, compression="zstd")

    def write(self, row: Mapping[str, Any]) -> None:
        self.buffer.append({c: row[c] for c in self.schema.names})
        if len(self.buffer) >= self.row_group_rows:
            self._flush()

    def _flush(self) -> None:
        try:
            arrow = pa.Table.from_pylist(self.buffer, self.schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
            raise WriterError(f"{self.path.name}: {e}") from e
        self.writer.write_table(arrow)
        self.rows += len(self.buffer)
        self.buffer = []

    def close(self) -> int:
        try:
            if self.buffer or not self.rows:  # an empty split still gets its schema and one empty group
                self._flush()
        finally:
            self.writer.close()
        return self.rows


class ParquetWriter(Writer):
    """Parquet through pyarrow with an explicit schema, so an empty split still has every column.

    Rows are written in row groups of :data:`ROW_GROUP_ROWS`.
    """

    extension = "parquet"

    def __init__(self, row_group_rows: int = ROW_GROUP_ROWS) -> None:
        self.row_group_rows = row_group_rows

    def open(self, path: Path, columns: Sequence[str], kinds: Mapping[str, str]) -> RowSink:
        try:
            schema = pa.schema([(c, _ARROW_TYPES[kinds[c]]) for c in columns])
        except KeyError as e:
            raise WriterError(f"{path.name}: column without a known kind: {e.args[0]!r}") from e
        return _ParquetSink(path, schema, self.row_group_rows)
