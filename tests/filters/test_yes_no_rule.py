"""The yes/no rule is one rule: instructions, tutorial examples, placeholder, QC and the reviewer agree.

SyllabusQA stores yes/no answers as one word, post-processing answers that carry an explanation
(papers/syllabusqa.txt 2.4); workers are told to start with Yes or No and may add a short explanation.
Such an answer passes QC, is stored as the one word, and its ``fixed`` flag is not a problem for review.
"""

from __future__ import annotations

import re
from pathlib import Path

from annotation import question_types as qt
from annotation.qc.common import ERROR, problem_flags
from annotation.qc.syllabusqa import SyllabusQAPair, check_pair
from annotation.tutorial import TYPED_PAIRS, load_tutorial
from console.templatetags.review_tags import flag_badge

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "jinja2" / "hits" / "syllabus_qa.html"


def _check(answer: str):  # type: ignore[no-untyped-def]
    pair = SyllabusQAPair("p", "s", qt.YES_NO, "Are grades curved in this course?", answer, ("Grading",))
    return check_pair(pair, None)


def test_answers_written_as_instructed_pass_and_store_one_word() -> None:
    tutorial = load_tutorial("syllabus_qa", TYPED_PAIRS)
    guide = tutorial.guide_for(qt.YES_NO)
    quoted = re.findall(r'"([^"]+)"', " ".join(guide.tips))
    assert quoted == ["No, grades are not curved."]
    answers = [ex.answer for ex in guide.examples] + quoted + ["Yes", "no"]
    for answer in answers:
        result = _check(answer)
        assert not [i for i in result.issues if i.severity == ERROR], answer
        assert result.normalized_answer == ("Yes" if answer.lower().startswith("yes") else "No")
        assert problem_flags(result.flags) == [], answer
        assert all(flag_badge(flag) == "ok" for flag in result.flags)
    assert _check("No, grades are not curved.").flags == ("yes_no_answer_not_single_word",)
    placeholder = re.search(r'placeholder="(Yes or No[^"]*)"', TEMPLATE.read_text(encoding="utf-8"))
    assert placeholder is not None and "short explanation" in placeholder.group(1)


def test_answer_without_yes_or_no_is_an_error_the_worker_sees() -> None:
    result = _check("Grades are not curved.")
    assert [(i.code, i.severity, i.field) for i in result.issues] == [
        ("yes_no_answer_not_single_word", ERROR, "answer")
    ]
    assert problem_flags(["profanity", "yes_no_answer_not_single_word"]) == ["profanity"]
