"""The run_qc dispatcher of filters/qc.py."""

from __future__ import annotations

import pytest

from annotation.qc.sciq import SciQItem
from annotation.qc.syllabusqa import SyllabusQAPair
from filters.qc import parse_record, run_qc


def test_parse_record__dispatches_by_style() -> None:
    syllabus = parse_record(
        {
            "id": 7,
            "syllabus_name": "s",
            "question_type": "yes/no",
            "question": "Is there a lab?",
            "answer": "Yes",
            "answer_spans": ["Lab", None],
            "reasoning_steps": [],
        }
    )
    sciq = parse_record({"id": "a", "question": "q", "answer": "a", "passage": "p", "distractors": ["x"]})
    assert (
        isinstance(syllabus, SyllabusQAPair) and syllabus.id == "7" and syllabus.answer_spans == ("Lab", "")
    )
    assert isinstance(sciq, SciQItem) and sciq.worker_distractors is None


def test_parse_record__error_names_location_and_field() -> None:
    with pytest.raises(ValueError, match="QA.jsonl line 3: field 'answer_spans'"):
        parse_record(
            {
                "id": "1",
                "syllabus_name": "s",
                "question_type": "yes/no",
                "question": "q",
                "answer_spans": "not a list",
            },
            "QA.jsonl line 3",
        )
    with pytest.raises(ValueError, match="missing field 'question'"):
        parse_record({"id": "1", "answer": "a"})


def test_run_qc__mixed_batch_keeps_order_and_shape() -> None:
    records = [
        parse_record(
            {
                "id": "s1",
                "question": "Which compounds are capable of accepting electrons easily?",
                "answer": "oxidants",
                "passage": "Oxidants accept electrons.",
                "distractors": ["a", "b", "c"],
            }
        ),
        parse_record(
            {
                "id": "y1",
                "syllabus_name": "doc",
                "question_type": "yes/no",
                "question": "Is late work accepted?",
                "answer": "No, never.",
                "answer_spans": ["late work is not accepted"],
            }
        ),
    ]
    out = run_qc(records, {"doc": "Late work is not accepted."})
    assert [o["id"] for o in out] == ["s1", "y1"]
    assert out[0]["flags"] == []
    assert out[1]["flags"] == ["yes_no_answer_not_single_word"]
    assert out[1]["normalized_answer"] == "No"
    assert out[1]["answer_spans"][0]["start"] == 0 and out[1]["answer_spans"][0]["status"] == "normalized"
