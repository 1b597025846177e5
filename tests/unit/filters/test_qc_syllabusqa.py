"""Every SyllabusQA QC code of annotation/qc/syllabusqa.py, plus a real-data slice."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from annotation.importers.syllabusqa_csv import read_split_csv, split_dir
from annotation.qc.syllabusqa import (
    NO_ANSWER,
    SyllabusQAOptions,
    SyllabusQAPair,
    check_pair,
    check_pairs,
    is_pii_request,
)

SYLLABUS = (
    "CHEM 101 Syllabus\nOffice hours: Tuesday 2-4pm in Room 101.\n"
    "Grading: homework 40%, midterm 25%, final exam 35%.\nLate homework is not accepted."
)
BASE = SyllabusQAPair(
    id="q1",
    syllabus_name="chem",
    question_type="single factual",
    question="How much is the midterm worth?",
    answer="It is 25%.",
    answer_spans=("midterm 25%",),
)


def flags(pair: SyllabusQAPair, **options: object) -> tuple[str, ...]:
    return check_pair(pair, SYLLABUS, SyllabusQAOptions(**options), profanity_score=0.0).flags


def test_check_pair__clean_pair_has_no_flags() -> None:
    result = check_pair(BASE, SYLLABUS, profanity_score=0.0)
    assert result.flags == ()
    assert result.normalized_answer == "It is 25%."
    assert result.spans[0].start == SYLLABUS.index("midterm 25%")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the professor's email address?", True),
        ("Who is the TA for this course?", True),
        ("What is the phone number of the instructor?", True),
        ("Is the professor married?", True),
        ("When are the TA's office hours?", False),
        ("Can I email the professor about an extension?", False),
        ("Who grades my assignments?", False),
    ],
)
def test_is_pii_request__personal_information_only(question: str, expected: bool) -> None:
    assert is_pii_request(question) is expected


def test_check_pair__pii_request_flagged_for_review() -> None:
    result = check_pair(
        replace(BASE, question="What is the instructor's phone number?"), SYLLABUS, profanity_score=0.0
    )
    assert "pii_request" in result.flags
    assert result.issues[0].severity == "review"


def test_check_pair__profanity_from_model() -> None:
    pair = replace(BASE, question="Why is this damn fucking midterm worth so much?")
    result = check_pair(pair, SYLLABUS)
    assert "profanity" in result.flags


def test_check_pair__span_not_in_document_is_error() -> None:
    result = check_pair(replace(BASE, answer_spans=("midterm is worth half",)), SYLLABUS, profanity_score=0.0)
    assert result.flags == ("span_not_in_document",)
    assert result.errors[0].field == "span-0"


def test_check_pair__span_repaired_to_document_text() -> None:
    result = check_pair(replace(BASE, answer_spans=("MIDTERM  25 %",)), SYLLABUS, profanity_score=0.0)
    assert result.flags == ()
    (span,) = result.spans
    assert span.status == "repaired" and span.text == "midterm 25%"
    assert SYLLABUS[span.start : span.end] == "midterm 25%"


@pytest.mark.parametrize(
    ("qtype", "spans", "steps", "code"),
    [
        ("single factual", (), (), "span_count"),
        ("single factual", ("midterm 25%", "final exam 35%"), (), "span_count"),
        ("multi factual", ("homework 40%",) * 6, (), "span_count"),
        ("single reasoning", ("midterm 25%",), ("a step",), "span_count"),
        ("single reasoning", (), (), "reasoning_step_count"),
        ("multi reasoning", (), ("only one step",), "reasoning_step_count"),
        ("summarization", (), ("a step",), "reasoning_step_count"),
    ],
)
def test_check_pair__span_and_step_counts(qtype: str, spans: tuple, steps: tuple, code: str) -> None:
    assert code in flags(replace(BASE, question_type=qtype, answer_spans=spans, reasoning_steps=steps))


def test_check_pair__counts_within_limits_pass() -> None:
    steps = ("Homework is 40%.", "The midterm is 25%.", "The final is 35%.")
    multi = replace(BASE, question_type="multi reasoning", answer_spans=(), reasoning_steps=steps)
    assert flags(multi) == ()


def test_check_pair__yes_no_answer_normalized_and_original_kept() -> None:
    pair = replace(
        BASE,
        question_type="yes/no",
        answer="Yes, late homework is never accepted.",
        answer_spans=("Late homework is not accepted.",),
    )
    result = check_pair(pair, SYLLABUS, profanity_score=0.0)
    assert result.flags == ("yes_no_answer_not_single_word",)
    assert result.normalized_answer == "Yes"
    assert result.issues[0].severity == "fixed"
    assert pair.answer.startswith("Yes, late")


def test_check_pair__yes_no_answer_without_yes_or_no_is_error() -> None:
    pair = replace(BASE, question_type="yes/no", answer="Only on Tuesdays", answer_spans=("Room 101",))
    result = check_pair(pair, SYLLABUS, profanity_score=0.0)
    assert result.errors[0].code == "yes_no_answer_not_single_word"


def test_check_pair__adversarial_answer_normalized() -> None:
    pair = replace(BASE, question_type="no answer", answer="The syllabus doesn't say.", answer_spans=())
    result = check_pair(pair, SYLLABUS, profanity_score=0.0)
    assert result.flags == ("adversarial_answer",)
    assert result.normalized_answer == NO_ANSWER


def test_check_pair__empty_adversarial_answer_filled_silently() -> None:
    result = check_pair(
        replace(BASE, question_type="no answer", answer="", answer_spans=()), SYLLABUS, profanity_score=0.0
    )
    assert result.flags == () and result.normalized_answer == NO_ANSWER


def test_check_pair__too_short() -> None:
    assert "too_short" in flags(replace(BASE, question="Midterm?"))
    assert "too_short" in flags(replace(BASE, answer=" "))


def test_check_pair__unknown_type_names_pair() -> None:
    with pytest.raises(ValueError, match="q1.*essay"):
        check_pair(replace(BASE, question_type="essay"), SYLLABUS, profanity_score=0.0)


def test_check_pairs__duplicate_question_on_same_syllabus_only() -> None:
    pairs = [
        BASE,
        replace(BASE, id="q2", question="How much is the midterm worth ?"),
        replace(BASE, id="q3", syllabus_name="other", question="How much is the midterm worth?"),
    ]
    results = check_pairs(pairs, {"chem": SYLLABUS, "other": SYLLABUS})
    assert [r.flags for r in results] == [(), ("duplicate_question",), ()]
    assert "q1" in results[1].issues[0].message


def test_check_pairs__annotator_cap_exceeded() -> None:
    pairs = [
        replace(BASE, id=f"q{i}", question=f"Question number {i} about grading?", worker_id="w1")
        for i in range(3)
    ]
    options = SyllabusQAOptions(max_pairs_per_syllabus=2)
    results = check_pairs(pairs, {"chem": SYLLABUS}, options)
    assert ["annotator_cap_exceeded" in r.flags for r in results] == [False, False, True]
    prior = check_pairs(
        pairs[:1], {"chem": SYLLABUS}, SyllabusQAOptions(max_pairs_total=5), prior_total={"w1": 5}
    )
    assert "annotator_cap_exceeded" in prior[0].flags


def test_check_pairs__real_syllabusqa_slice(shared_data: Callable[[str], Path]) -> None:
    root = shared_data("syllabusqa")
    rows = read_split_csv(split_dir(root) / "val.csv")[:120]
    names = {r.syllabus_name for r in rows}
    text_dir = root / "syllabi" / "syllabi_redacted" / "text_utf8"
    documents = {n: (text_dir / f"{n}.txt").read_text(encoding="utf-8") for n in names}
    pairs = [SyllabusQAPair.from_qa_row(r) for r in rows]
    results = check_pairs(pairs, documents)
    # The release already enforces counts and normalised answers, so those checks must stay quiet.
    quiet = {
        "span_count",
        "reasoning_step_count",
        "yes_no_answer_not_single_word",
        "adversarial_answer",
    }
    assert not quiet & {f for r in results for f in r.flags}
    # Short answers and steps are flagged for review (the authors' rule), never as errors.
    assert not [i for r in results for i in r.errors if i.code == "too_short"]
    spans = [s for r in results for s in r.spans]
    assert sum(s.found for s in spans) / len(spans) > 0.6
    for pair, result in zip(pairs, results, strict=True):
        for span in result.spans:
            if span.found:
                assert documents[pair.syllabus_name][span.start : span.end] == span.text


@pytest.mark.parametrize(
    ("question_type", "answer", "steps", "fields"),
    [
        ("single factual", "25%", (), ["answer"]),
        ("single factual", "It is 25%.", (), []),
        ("yes/no", "Yes", (), []),
        ("no answer", NO_ANSWER, (), []),
        ("single reasoning", "The final exam is worth most.", ("Final 35%",), ["step-0"]),
        # Counted as the authors count: len(text.split(" ")), so two spaces make three "words".
        ("single factual", "25  %", (), []),
    ],
)
def test_check_pair__authors_length_rule_for_answers_and_steps(
    question_type: str, answer: str, steps: tuple[str, ...], fields: list[str]
) -> None:
    pair = replace(BASE, question_type=question_type, answer=answer, answer_spans=(), reasoning_steps=steps)
    result = check_pair(pair, SYLLABUS, profanity_score=0.0)
    short = [i for i in result.issues if i.code == "too_short"]
    assert [i.field for i in short] == fields
    assert all(i.severity == "review" for i in short)


def test_check_pair__profanity_scored_per_column() -> None:
    pair = replace(BASE, reasoning_steps=("fine step here",))
    scores = {"question": 0.1, "answer": 0.1, "span-0": 0.95, "step-0": 0.2}
    result = check_pair(pair, SYLLABUS, profanity_score=scores)
    assert [(i.code, i.field) for i in result.issues if i.code == "profanity"] == [("profanity", "span-0")]


def test_severities_of__keeps_the_severity_each_code_was_raised_with() -> None:
    from annotation.qc.common import ERROR, FIXED, REVIEW, QCIssue, error_flags, severities_of

    review = QCIssue("too_short", REVIEW, "answer", "2 words")
    error = QCIssue("too_short", ERROR, "question", "1 word")
    fixed = QCIssue("adversarial_answer", FIXED, "answer", "normalised")
    assert severities_of([review, fixed]) == {"too_short": REVIEW, "adversarial_answer": FIXED}
    assert severities_of([review, error])["too_short"] == ERROR
    assert severities_of([error.to_dict(), review.to_dict()])["too_short"] == ERROR
    assert error_flags(["too_short", "adversarial_answer"], severities_of([review, fixed])) == []
    assert error_flags(["too_short"], severities_of([error])) == ["too_short"]
    # pairs checked before severities were stored fall back to the code's registered severity
    assert error_flags(["too_short", "profanity"]) == ["too_short"]
