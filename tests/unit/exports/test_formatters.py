"""Tests for exports/formatters.py."""

from __future__ import annotations

import pytest

from exports.formatters import (
    DirectAnswerFormatter,
    FormatError,
    MultipleChoiceCsvFormatter,
    MultipleChoiceFormatter,
    SyllabusQANestedFormatter,
    extra_field_kinds,
    shuffled_options,
)
from exports.records import MCQRecord


def _mcq(i: int, support: str = "Plants take in carbon dioxide.") -> MCQRecord:
    return MCQRecord(
        id=f"m{i}",
        question=f"Question {i}?",
        correct_answer=f"right {i}",
        distractors=(f"wrong {i}a", f"wrong {i}b", f"wrong {i}c"),
        support=support,
    )


def test_shuffled_options__seeded_per_item_and_key_points_at_answer():
    records = [_mcq(i) for i in range(40)]
    orders = [shuffled_options(r, seed=3) for r in records]
    assert orders == [shuffled_options(r, seed=3) for r in records]
    for record, (options, correct) in zip(records, orders, strict=False):
        assert options[correct] == record.correct_answer
        assert sorted(options) == sorted([record.correct_answer, *record.distractors])
    assert len({correct for _, correct in orders}) > 1  # the answer is not always in one place
    assert orders != [shuffled_options(r, seed=4) for r in records]


def test_shuffled_options__distractor_equal_to_answer_is_kept_and_logged(caplog):
    record = MCQRecord(id="m", question="q", correct_answer="a", distractors=("a", "b"))
    options, correct = shuffled_options(record, seed=0)
    assert sorted(options) == ["a", "a", "b"] and options[correct] == "a"
    assert "MCQRecord(m): a distractor equals the answer" in caplog.text


def test_shuffled_options__too_many_options_raises():
    record = MCQRecord(id="m", question="q", correct_answer="a", distractors=tuple("bcdefg"))
    with pytest.raises(FormatError, match="m: 7 options, at most 6"):
        shuffled_options(record, seed=0)


def test_multiple_choice_formatter__has_no_passage_and_a_letter_key():
    table = MultipleChoiceFormatter(seed=1).format([_mcq(1), _mcq(2)])
    assert "passage" not in table.columns and "support" not in table.columns
    for row in table.rows:
        assert row["options"]["ABCDEF".index(row["answer_key"])] == row["answer"]


def test_multiple_choice_csv_formatter__one_column_per_option():
    table = MultipleChoiceCsvFormatter(seed=1).format([_mcq(1)])
    row = table.rows[0]
    assert [c for c in table.columns if c.startswith("option_")] == [f"option_{x}" for x in "abcdef"]
    assert row[f"option_{row['answer_key'].lower()}"] == "right 1"
    assert row["option_e"] is None


def test_direct_answer_formatter__leaves_out_items_without_passage_and_counts_them():
    table = DirectAnswerFormatter().format([_mcq(1), _mcq(2, support=""), _mcq(3, support="  ")])
    assert [r["id"] for r in table.rows] == ["m1"]
    assert table.excluded == 2
    assert table.rows[0]["passage"] == "Plants take in carbon dioxide."


def test_syllabusqa_nested_formatter__lists_source_and_extras(make_qa):
    records = [make_qa(extra={"batch": 3}), make_qa(id="q2", question_type="no answer", answer_spans=())]
    table = SyllabusQANestedFormatter().format(records)
    assert table.rows[0]["answer_spans"] == ["Office hours: Mondays 2pm"]
    assert [r["answer_source"] for r in table.rows] == ["explicit", "insufficient"]
    assert table.kinds["batch"] == "int"
    assert [r["batch"] for r in table.rows] == [3, None]


def test_formatter__wrong_record_type_raises(make_qa):
    with pytest.raises(FormatError, match="record 'q1' is a QARecord, expected MCQRecord"):
        DirectAnswerFormatter().format([make_qa()])


def test_extra_field_kinds__mixed_numbers_are_float_and_lists_rejected(make_qa):
    records = [make_qa(extra={"score": 1}), make_qa(id="q2", extra={"score": 0.5})]
    assert extra_field_kinds(records) == {"score": "float"}
    with pytest.raises(FormatError, match="'tags'"):
        extra_field_kinds([make_qa(extra={"tags": ["a"]})])
