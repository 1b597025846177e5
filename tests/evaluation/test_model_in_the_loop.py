"""Model in the loop: judging rules (no-answer judged the other way) and the replay command on real data."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import question_types as qt
from evaluation.model_in_the_loop import (
    FOOLED,
    MATCHED,
    ModelAnswer,
    check_pair,
    judge_answer,
    search_answer,
)
from evaluation.schema import INSUFFICIENT_ANSWER

SYLLABUS = " ".join(
    (
        "Course: Organic Chemistry 201, taught in the fall semester.",
        "Instructor: Dr. Ada Lovelace, reachable by email through the course website.",
        "Office hours are Tuesdays 2-4 pm in Room 310 of the Science Building.",
        "Grading: midterm exam 30 percent, final exam 40 percent, weekly homework 30 percent.",
        "Late homework loses ten percent of its credit per day.",
        "The required textbook is Clayden, Organic Chemistry, second edition.",
        "Laboratory sessions meet on Thursdays in the basement teaching lab.",
        "Safety goggles and a lab coat are required for every laboratory session.",
        "Academic honesty: copying another student's work is reported to the dean.",
        "Students with disabilities should contact the accessibility office early.",
    )
)
ABSTAINED = ModelAnswer(text=INSUFFICIENT_ANSWER, abstained=True, retrieval_score=1.2)
ANSWERED = ModelAnswer(
    text="Office hours are Tuesdays 2-4 pm in Room 310", abstained=False, retrieval_score=9.0
)


def test_no_answer__matched_only_when_the_model_abstains() -> None:
    """The adversarial type wants the model to say there is no answer: answering is being fooled."""
    assert judge_answer(ABSTAINED, "No answer", qt.NO_ANSWER) == (MATCHED, 1.0)
    assert judge_answer(ANSWERED, "No answer", qt.NO_ANSWER) == (FOOLED, 0.0)
    assert judge_answer(ANSWERED, "No answer", qt.NO_ANSWER, judge="rouge_l") == (FOOLED, 0.0)


def test_answerable__abstaining_is_fooled_and_the_judges_compare_texts() -> None:
    assert judge_answer(ABSTAINED, "Room 310", qt.SINGLE_FACTUAL) == (FOOLED, 0.0)
    assert judge_answer(ANSWERED, "room 310", qt.SINGLE_FACTUAL) == (MATCHED, 1.0)
    assert judge_answer(ANSWERED, "Room 999", qt.SINGLE_FACTUAL) == (FOOLED, 0.0)
    assert judge_answer(ANSWERED, "", qt.SINGLE_FACTUAL)[0] == FOOLED  # an empty answer matches nothing
    verdict, score = judge_answer(ANSWERED, "Tuesdays 2-4 pm, Room 310", qt.SINGLE_FACTUAL, judge="rouge_l")
    assert verdict == MATCHED and 0.3 <= score <= 1.0
    verdict, score = judge_answer(ANSWERED, "the final is worth forty", qt.SINGLE_FACTUAL, judge="rouge_l")
    assert verdict == FOOLED and score < 0.3
    with pytest.raises(ValueError, match="unknown judge"):
        judge_answer(ANSWERED, "x", qt.SINGLE_FACTUAL, judge="exact")


def test_search_answer__abstains_under_the_bm25_threshold() -> None:
    """A ten-sentence syllabus has few chunks, so its BM25 scores are small: the threshold is set to 1 here
    (the default, 4.0, is read off the real syllabi of SyllabusQA's val split)."""
    on_topic = search_answer(SYLLABUS, "When are office hours?", no_answer_below=1.0)
    assert not on_topic.abstained and "Office hours" in on_topic.text
    off_topic = search_answer(SYLLABUS, "Is there a field trip to the zoo?", no_answer_below=1.0)
    assert off_topic.abstained and off_topic.text == INSUFFICIENT_ANSWER
    assert off_topic.retrieval_score < on_topic.retrieval_score
    result = check_pair(
        SYLLABUS, "Is there a field trip to the zoo?", "No answer", qt.NO_ANSWER, no_answer_below=1.0
    )
    answered = check_pair(
        SYLLABUS, "When are office hours?", "Room 310", qt.SINGLE_FACTUAL, no_answer_below=1.0
    )
    assert (answered.verdict, answered.score, answered.abstained) == (MATCHED, 1.0, False)
    assert (result.verdict, result.system, result.judge, result.abstained) == (
        MATCHED,
        "search",
        "lexical",
        True,
    )
    assert result.latency_s >= 0
    with pytest.raises(ValueError, match="unknown system"):
        check_pair(SYLLABUS, "q", "a", qt.YES_NO, system="gpt")


def _replay(*args: str) -> tuple[list[str], dict]:
    out = StringIO()
    call_command("model_in_the_loop", *args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    return lines, json.loads(lines[-1])


@pytest.mark.django_db
def test_replay__real_syllabusqa_test_pairs(shared_data, trimmed_syllabusqa) -> None:
    """Two real test syllabi: every type counted, verdicts computed (neither all fooled nor all matched)."""
    source: Path = trimmed_syllabusqa(shared_data("syllabusqa"))
    call_command("import_syllabusqa", str(source), "--corpus", "sqa-mitl", stdout=StringIO())
    lines, summary = _replay("--corpus", "sqa-mitl")
    assert lines[0].split()[:3] == ["type", "n", "fooled"] and lines[-2].startswith("overall")
    assert summary["corpus"] == "sqa-mitl" and summary["split"] == "test" and summary["system"] == "search"
    assert set(summary["by_type"]) == set(qt.SYLLABUS_TYPES)
    assert summary["n"] == sum(group["n"] for group in summary["by_type"].values()) > 0
    assert 0 < summary["fooled"] < summary["n"], "verdicts must vary on real data"
    for group in summary["by_type"].values():
        assert group["fooled"] + group["matched"] == group["n"]
        assert 0.0 <= group["fooled_rate"] <= 1.0
        assert 0.0 <= group["latency_p50_s"] <= group["latency_p95_s"] < 5.0
    no_answer = summary["by_type"][qt.NO_ANSWER]
    assert 0 < no_answer["matched"], "some no-answer questions make the search baseline abstain"
    _, rouge = _replay("--corpus", "sqa-mitl", "--judge", "rouge_l", "--threshold", "0.2", "--json")
    assert rouge["judge"] == "rouge_l" and rouge["n"] == summary["n"]
    assert 0 < rouge["fooled"] < rouge["n"]
    only_json, _ = _replay("--corpus", "sqa-mitl", "--json", "--limit", "3")
    assert len(only_json) == 1 and json.loads(only_json[0])["n"] == 3


@pytest.mark.django_db
def test_replay__unknown_corpus_is_an_error() -> None:
    with pytest.raises(CommandError, match="no corpus"):
        call_command("model_in_the_loop", "--corpus", "missing", stdout=StringIO())
