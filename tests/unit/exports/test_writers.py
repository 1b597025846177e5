"""Tests for exports/writers.py."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from exports.formatters import Table
from exports.writers import CsvWriter, JsonlWriter, ParquetWriter, WriterError

KINDS = {"id": "string", "text": "string", "spans": "string_list", "n": "int"}
ROWS = [
    {"id": "a", "text": 'He said "hi",\nthen left', "spans": ["x", "é"], "n": 1},
    {"id": "b", "text": "", "spans": [], "n": None},
]


def test_csv_writer__minimal_quoting_lf_and_empty_cells(tmp_path):
    table = Table(("id", "text", "n"), KINDS, [{k: r[k] for k in ("id", "text", "n")} for r in ROWS])
    path = tmp_path / "t.csv"
    assert CsvWriter().write(table, path) == 2
    assert path.read_bytes() == b'id,text,n\na,"He said ""hi"",\nthen left",1\nb,,\n'


def test_csv_writer__list_column_raises(tmp_path):
    with pytest.raises(WriterError, match="t.csv: CSV cannot hold list column"):
        CsvWriter().write(Table(("id", "spans"), KINDS, []), tmp_path / "t.csv")


def test_jsonl_writer__round_trips_utf8_and_lists(tmp_path):
    path = tmp_path / "t.jsonl"
    JsonlWriter().write(Table(tuple(KINDS), KINDS, ROWS), path)
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == ROWS
    assert "é" in path.read_text(encoding="utf-8")


def test_jsonl_writer__nan_names_row(tmp_path):
    table = Table(("id", "x"), {"id": "string", "x": "float"}, [{"id": "r1", "x": float("nan")}])
    with pytest.raises(WriterError, match="row 1 \\(id 'r1'\\)"):
        JsonlWriter().write(table, tmp_path / "t.jsonl")


def test_parquet_writer__typed_round_trip_and_empty_table_keeps_schema(tmp_path):
    path = tmp_path / "t.parquet"
    ParquetWriter().write(Table(tuple(KINDS), KINDS, ROWS), path)
    assert pq.read_table(path).to_pylist() == ROWS
    empty = tmp_path / "e.parquet"
    assert ParquetWriter().write(Table(tuple(KINDS), KINDS, []), empty) == 0
    assert pq.read_schema(empty).names == list(KINDS)


def test_parquet_writer__same_table_same_bytes(tmp_path):
    ParquetWriter().write(Table(tuple(KINDS), KINDS, ROWS), tmp_path / "a.parquet")
    ParquetWriter().write(Table(tuple(KINDS), KINDS, ROWS), tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
