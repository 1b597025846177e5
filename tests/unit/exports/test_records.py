"""Tests for exports/records.py."""

from __future__ import annotations

import csv

import pytest

from annotation.importers.syllabusqa_csv import COLUMNS, read_split_csv
from exports.formatters import SyllabusQACsvFormatter
from exports.records import (
    ANSWER_SOURCES,
    MCQRecord,
    QARecord,
    RecordError,
    qa_record_from_qa_row,
    record_kind,
)
from exports.writers import CsvWriter


def test_qa_record_from_qa_row__round_trip_of_real_csvs_is_identical(
    syllabusqa_root, syllabusqa_rows, tmp_path
):
    total = 0
    for split, rows in syllabusqa_rows.items():
        records = [qa_record_from_qa_row(row) for row in rows]
        out = tmp_path / f"{split}.csv"
        CsvWriter().write(SyllabusQACsvFormatter().format(records), out)
        original = syllabusqa_root / "data" / "dataset_split" / f"{split}.csv"
        with out.open(encoding="utf-8", newline="") as handle:
            written = list(csv.DictReader(handle))
        with original.open(encoding="utf-8", newline="") as handle:
            expected = list(csv.DictReader(handle))
        assert [r["id"] for r in written] == [r.id for r in rows]
        assert written == expected
        assert out.read_bytes() == original.read_bytes()
        total += len(written)
    assert total == 5078


def test_qa_record_from_qa_row__keeps_interior_empty_slot(tmp_path):
    row = dict.fromkeys(COLUMNS, "")
    row.update(id="x", syllabus_name="s", question_type="multi factual", answer_span_1="a", answer_span_3="c")
    path = tmp_path / "train.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerow(row)
    (qa_row,) = read_split_csv(path)
    record = qa_record_from_qa_row(qa_row)
    assert record.answer_spans == ("a", "", "c")
    assert record.to_syllabusqa_row() == row


def test_qarecord__too_many_spans_raises(make_qa):
    with pytest.raises(RecordError, match="6 answer_spans"):
        make_qa(answer_spans=tuple("abcdef"))


def test_qarecord__document_id_defaults_to_syllabus_name(make_qa):
    assert make_qa().document_id == "bio101"
    assert make_qa(document_id="doc-7").document_id == "doc-7"


def test_qarecord__answer_source_follows_the_paper(make_qa):
    assert make_qa(question_type="summarization").answer_source == "implicit"
    assert make_qa(question_type="yes/no").answer_source == "explicit"
    assert make_qa(question_type="no answer").answer_source == "insufficient"
    assert make_qa(question_type="other").answer_source is None
    assert sorted(set(ANSWER_SOURCES.values())) == ["explicit", "implicit", "insufficient"]


def test_qarecord__extra_field_cannot_shadow_standard_field(make_qa):
    with pytest.raises(RecordError, match="shadows"):
        make_qa(extra={"answer": "x"}).content_dict()


def test_record_kind__rejects_mixed_records(make_qa):
    mcq = MCQRecord(id="m", question="q", correct_answer="a", distractors=("b",))
    assert record_kind([make_qa()]) == "qa"
    assert record_kind([mcq]) == "mcq"
    with pytest.raises(RecordError, match="one kind"):
        record_kind([make_qa(), mcq])
    with pytest.raises(RecordError):
        record_kind([])


def test_qarecord__empty_id_raises():
    with pytest.raises(RecordError, match="empty id"):
        QARecord(id="", syllabus_name="s", question_type="yes/no", question="q", answer="Yes")
