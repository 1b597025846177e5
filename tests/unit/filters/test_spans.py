"""Span location and repair of annotation/spans.py."""

from __future__ import annotations

from annotation.spans import (
    EXACT,
    MAX_REPAIR_CHARS,
    NORMALIZED,
    NOT_FOUND,
    REPAIRED,
    locate_spans,
    normalize_document,
)

DOC = "Course Policies\n\nLate  homework is NOT accepted.\r\nOffice hours: Tuesday 2-4pm in Room 101."


def test_locate_spans__exact_offsets() -> None:
    (match,) = locate_spans(["Office hours: Tuesday 2-4pm"], DOC)
    assert match.status == EXACT
    assert DOC[match.start : match.end] == "Office hours: Tuesday 2-4pm"


def test_locate_spans__case_and_whitespace_normalized_to_document_text() -> None:
    (match,) = locate_spans(["late homework is not accepted."], DOC)
    assert match.status == NORMALIZED
    assert match.text == "Late  homework is NOT accepted."
    assert (match.start, match.end) == (DOC.index("Late"), DOC.index("accepted.") + len("accepted."))


def test_locate_spans__near_miss_repaired_with_offsets() -> None:
    (match,) = locate_spans(["Office hours: Tusday 2-4 pm in Room 101"], DOC)
    assert match.status == REPAIRED
    assert match.distance == 2
    assert match.text == "Office hours: Tuesday 2-4pm in Room 101"
    assert DOC[match.start : match.end] == match.text


def test_locate_spans__too_far_not_found() -> None:
    (match,) = locate_spans(["Office hours are on Wednesdays at noon"], DOC)
    assert match.status == NOT_FOUND
    assert match.start is None and match.text == "Office hours are on Wednesdays at noon"


def test_locate_spans__max_edits_zero_disables_repair() -> None:
    (match,) = locate_spans(["Office hours: Tusday 2-4pm"], DOC, max_edits=0)
    assert match.status == NOT_FOUND


def test_locate_spans__empty_spans_skipped_but_index_kept() -> None:
    matches = locate_spans(["", "Room 101", "  "], DOC)
    assert [(m.index, m.status) for m in matches] == [(1, EXACT)]


def test_normalize_document__offsets_map_back() -> None:
    doc = normalize_document("A  B\n\nC")
    assert doc.text == "a b c"
    assert doc.span_of(2, 5) == (3, 7)


def test_find__offsets_in_the_original_across_line_breaks_and_dotted_i() -> None:
    text = "Grading:\nMidterm   exam 1:\n15%\nFinal \u0130stanbul trip"
    doc = normalize_document(text)
    found = doc.find("midterm exam 1: 15%")
    assert found is not None and text[found[0] : found[1]] == "Midterm   exam 1:\n15%"
    # 'İ' lowercases to two characters; offsets after it still point at the original text.
    trip = doc.find("trip")
    assert trip is not None and text[trip[0] : trip[1]] == "trip"
    assert normalize_document("a b a b").find("a b", start=1) == (4, 7)
    assert doc.find("") is None and doc.find("absent") is None


def test_locate_spans__long_near_misses_are_not_repaired_in_bounded_time() -> None:
    import time

    document = " ".join(f"word{i} syllabus text" for i in range(5000))
    span = document[1000 : 1000 + MAX_REPAIR_CHARS + 200].replace("syllabus", "syllabvs", 1)
    started = time.process_time()
    (match,) = locate_spans([span], document)
    assert match.status == NOT_FOUND
    assert time.process_time() - started < 5.0
