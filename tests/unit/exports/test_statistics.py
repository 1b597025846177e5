"""Tests for exports/statistics.py."""

from __future__ import annotations

from collections import Counter

from exports.records import ANSWER_SOURCES
from exports.statistics import DocumentInfo, Summary, count_tokens, length_statistics, type_breakdown


def test_count_tokens__words_and_punctuation():
    assert count_tokens("10%, due Friday.") == 6
    assert count_tokens("") == 0


def test_summary_of__empty_is_undefined():
    assert Summary.of([]).mean is None
    assert Summary.of([1, 2, 6]).to_dict() == {"mean": 3.0, "min": 1, "max": 6, "n": 3}


def test_length_statistics__documents_counted_once(make_qa):
    records = [make_qa(id="a"), make_qa(id="b"), make_qa(id="c", syllabus_name="chem")]
    docs = {"bio101": DocumentInfo(pages=4, tokens=1000), "chem": DocumentInfo(pages=10, tokens=3000)}
    stats = length_statistics(records, docs)
    assert stats["pages_per_document"].to_dict() == {"mean": 7.0, "min": 4, "max": 10, "n": 2}
    assert stats["tokens_per_question"].mean == count_tokens("When are office hours?")


def test_type_breakdown__real_syllabusqa_matches_counts(syllabusqa_records):
    breakdown = type_breakdown(syllabusqa_records)
    types = Counter(r.question_type for r in syllabusqa_records)
    assert {t: v["count"] for t, v in breakdown["question_types"].items()} == dict(types)
    sources = Counter(ANSWER_SOURCES[t] for t in (r.question_type for r in syllabusqa_records))
    assert {s: v["count"] for s, v in breakdown["answer_sources"].items()} == dict(sources)
    assert abs(sum(v["percent"] for v in breakdown["answer_sources"].values()) - 100) < 0.2


def test_type_breakdown__empty_split_has_undefined_percent():
    breakdown = type_breakdown([])
    assert breakdown["question_types"]["yes/no"] == {"count": 0, "percent": None}
