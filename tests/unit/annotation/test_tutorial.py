"""Tests of annotation/tutorial.py and the tutorial content files.

The examples are checked against the demo documents they are about and against the same QC the HIT
forms run, so a worked example can never teach something the form would reject.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from annotation import question_types as qt
from annotation.qc.sciq import SciQItem, SciQOptions, check_item
from annotation.qc.syllabusqa import SyllabusQAPair, check_pair
from annotation.spans import EXACT
from annotation.tutorial import (
    PASSAGE_QUESTIONS,
    TYPED_PAIRS,
    VALIDATIONS,
    Layout,
    load_tutorial,
    load_tutorial_file,
    parse_tutorial,
)
from annotation.tutorial_types import SciQDistractorExample, SciQQuestionExample, SyllabusExample, Tutorial

ROOT = Path(__file__).resolve().parents[3]
DEMO_SYLLABUS = ROOT / "demo" / "syllabi" / "BIO 105 Exploring Life Fall 2026.txt"
DEMO_TEXTBOOK = ROOT / "demo" / "textbook" / "cells-and-energy.txt"
CONTENT = ROOT / "annotation" / "tutorial_content"
#: The content files and the layout each HIT handler names for its file (tests/test_hit_kinds.py checks
#: the handlers against this table).
LAYOUTS: dict[str, Layout] = {
    "syllabus_qa": TYPED_PAIRS,
    "sciq_question": PASSAGE_QUESTIONS,
    "sciq_distractor": VALIDATIONS,
}


def _load(name: str) -> Tutorial:
    return load_tutorial(name, LAYOUTS[name])


def _syllabus_text() -> str:
    """The demo syllabus as ``load_demo`` stores it: pages joined without the form feeds."""
    return "".join(DEMO_SYLLABUS.read_text(encoding="utf-8").split("\f"))


def _textbook_paragraphs() -> list[str]:
    text = DEMO_TEXTBOOK.read_text(encoding="utf-8")
    return [p.strip() for p in text.split("\n\n") if p.strip()]


def _syllabus_examples() -> list[SyllabusExample]:
    examples = _load("syllabus_qa").examples
    assert all(isinstance(e, SyllabusExample) for e in examples)
    return list(examples)  # type: ignore[arg-type]


def _raw(kind: str) -> dict:
    return json.loads((CONTENT / f"{kind}.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_load_tutorial__each_file_loads(name: str) -> None:
    loaded = _load(name)
    assert isinstance(loaded, Tutorial)
    assert loaded.name == name and loaded.examples_template == LAYOUTS[name].examples_template
    assert loaded.consent.paragraphs and loaded.instructions and loaded.rules and loaded.checklist
    assert loaded.examples
    assert list(loaded.consent) == list(loaded.consent.paragraphs)
    consent = " ".join(loaded.consent.paragraphs).lower()
    for promise in ("public research dataset", "pseudonym", "stop at any time"):
        assert promise in consent
    # Everything a template loops over is a tuple: immutable and safe to share between requests.
    for name in ("instructions", "rules", "type_guides", "flags", "examples", "checklist"):
        assert isinstance(getattr(loaded, name), tuple)


def test_load_tutorial__cached_and_frozen() -> None:
    first = _load("syllabus_qa")
    assert _load("syllabus_qa") is first
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.title = "changed"  # type: ignore[misc]


def test_load_tutorial__unknown_file_raises() -> None:
    with pytest.raises(ValueError, match="no tutorial tutorial_content/screening.json"):
        load_tutorial("screening", TYPED_PAIRS)
    with pytest.raises(ValueError, match="no tutorial"):
        load_tutorial("../tutorial_content/syllabus_qa", TYPED_PAIRS)


@pytest.mark.parametrize(
    ("name", "layout"),
    [("sciq_question", TYPED_PAIRS), ("syllabus_qa", PASSAGE_QUESTIONS), ("sciq_question", VALIDATIONS)],
)
def test_parse_tutorial__a_file_read_with_another_layout_raises(name: str, layout: Layout) -> None:
    with pytest.raises(ValueError, match=rf"{name}\.json"):
        parse_tutorial(_raw(name), f"{name}.json", layout)


def test_load_tutorial__syllabus_has_two_examples_per_type() -> None:
    counts = Counter(e.question_type for e in _syllabus_examples())
    assert counts == {t: qt.PAIRS_PER_TYPE for t in qt.SYLLABUS_TYPES}
    assert sum(counts.values()) == 14


def test_load_tutorial__type_guides_follow_question_types() -> None:
    loaded = _load("syllabus_qa")
    assert tuple(g.question_type for g in loaded.type_guides) == qt.SYLLABUS_TYPES
    for guide in loaded.type_guides:
        assert (guide.min_spans, guide.max_spans) == qt.SPAN_COUNTS[guide.question_type]
        assert (guide.min_steps, guide.max_steps) == qt.step_counts(guide.question_type)
        assert [e.question_type for e in guide.examples] == [guide.question_type] * 2
        assert guide.tips and guide.evidence
        assert re.fullmatch(r"[a-z-]+", guide.slug)
    assert loaded.guide_for("multi reasoning").label == "Multi reasoning"
    with pytest.raises(KeyError, match="sciq"):
        loaded.guide_for("sciq")


def test_syllabus_examples__spans_are_exact_substrings_of_demo_syllabus() -> None:
    text = _syllabus_text()
    spans = [(i, s) for i, e in enumerate(_syllabus_examples()) for s in e.answer_spans]
    assert spans
    for index, span in spans:
        assert span in text, f"example {index}: span not in the demo syllabus: {span!r}"
        assert span == span.strip() and "\n" not in span, f"example {index}: untidy span {span!r}"


def test_syllabus_examples__span_and_step_counts_match_rules() -> None:
    expected_spans = {
        "yes/no": (1, 1),
        "single factual": (1, 1),
        "multi factual": (1, 5),
        "summarization": (1, 5),
        "single reasoning": (0, 0),
        "multi reasoning": (0, 0),
        "no answer": (0, 0),
    }
    expected_steps = {"single reasoning": (1, 1), "multi reasoning": (2, 5)}
    for i, example in enumerate(_syllabus_examples()):
        low, high = expected_spans[example.question_type]
        assert low <= len(example.answer_spans) <= high, f"example {i}"
        low, high = expected_steps.get(example.question_type, (0, 0))
        assert low <= len(example.reasoning_steps) <= high, f"example {i}"


def test_syllabus_examples__pass_qc_without_errors() -> None:
    text = _syllabus_text()
    for i, example in enumerate(_syllabus_examples()):
        pair = SyllabusQAPair(
            id=f"tutorial-{i}",
            syllabus_name="BIO 105 Exploring Life Fall 2026",
            question_type=example.question_type,
            question=example.question,
            answer=example.answer,
            answer_spans=example.answer_spans,
            reasoning_steps=example.reasoning_steps,
        )
        result = check_pair(pair, text)
        assert result.errors == (), f"example {i}: {[x.message for x in result.errors]}"
        # A tutorial must not teach anything a reviewer would be asked to look at either.
        assert not {"pii_request", "profanity", "span_not_in_document"} & set(result.flags), f"example {i}"
        assert [m.status for m in result.spans] == [EXACT] * len(example.answer_spans), f"example {i}"
        if example.question_type == "yes/no":
            assert result.normalized_answer in ("Yes", "No")
            assert example.answer.split()[0].strip(",.") == result.normalized_answer


def test_syllabus_examples__yes_no_has_both_answers() -> None:
    firsts = {e.answer.split()[0].strip(",.") for e in _syllabus_examples() if e.question_type == "yes/no"}
    assert firsts == {"Yes", "No"}


def test_syllabus_examples__no_answer_really_unanswered() -> None:
    text = _syllabus_text().lower()
    no_answer = [e for e in _syllabus_examples() if e.question_type == "no answer"]
    assert len(no_answer) == 2
    for example in no_answer:
        assert example.answer == qt.NO_ANSWER_TEXT
        assert example.answer_spans == () and example.reasoning_steps == ()
        assert example.absent_terms
        # The key term (first) is part of the question; neither it nor its synonyms are in the syllabus.
        assert example.absent_terms[0].lower() in example.question.lower()
        for term in example.absent_terms:
            assert re.search(rf"\b{re.escape(term.lower())}\b", text) is None, term


def test_syllabus_examples__questions_distinct_and_why_given() -> None:
    examples = _syllabus_examples()
    assert len({e.question.lower() for e in examples}) == len(examples)
    assert all(e.why.endswith(".") for e in examples)


def test_sciq_question_examples__pass_stage1_qc_and_answer_in_passage() -> None:
    paragraphs = _textbook_paragraphs()
    examples = _load("sciq_question").examples
    assert 2 <= len(examples) <= 3
    for i, example in enumerate(examples):
        assert isinstance(example, SciQQuestionExample)
        assert example.passage in paragraphs, f"example {i}: passage is not a demo textbook paragraph"
        assert example.answer.lower() in example.passage.lower()
        item = SciQItem(
            id=f"tutorial-{i}", question=example.question, answer=example.answer, passage=example.passage
        )
        result = check_item(item, SciQOptions(check_distractors=False))
        assert result.flags == (), f"example {i}: {result.flags}"


def test_sciq_question_counterexamples__trigger_their_flag() -> None:
    flagged = 0
    for example in _load("sciq_question").examples:
        assert isinstance(example, SciQQuestionExample)
        for bad in example.counterexamples:
            item = SciQItem(id="bad", question=bad.question, answer=bad.answer, passage=example.passage)
            result = check_item(item, SciQOptions(check_distractors=False))
            if bad.flag is not None:
                flagged += 1
                assert bad.flag in result.flags, f"{bad.question!r}: {result.flags}"
    assert flagged >= 2


def test_sciq_distractor_tutorial__flags_have_contract_codes() -> None:
    loaded = _load("sciq_distractor")
    assert tuple(f.code for f in loaded.flags) == (
        "ungrammatical",
        "false_answer",
        "unrelated",
        "too_specific",
    )
    assert tuple(f.label for f in loaded.flags) == (
        "Ungrammatical",
        "The answer is false",
        "Unrelated to science",
        "Too specific to the passage",
    )


def test_sciq_distractor_examples__pass_full_qc() -> None:
    stage1 = {e.question: e for e in _load("sciq_question").examples}  # type: ignore[union-attr]
    examples = _load("sciq_distractor").examples
    assert len(examples) == 2
    for i, example in enumerate(examples):
        assert isinstance(example, SciQDistractorExample)
        assert len(example.suggestions) == 6
        assert len(example.chosen) <= 2 and len(example.own) >= 1 and len(example.distractors) == 3
        passage = stage1[example.question].passage if example.question in stage1 else ""
        item = SciQItem(
            id=f"tutorial-{i}",
            question=example.question,
            answer=example.answer,
            passage=passage,
            distractors=example.distractors,
            worker_distractors=example.own,
        )
        assert check_item(item).flags == (), f"example {i}"
        # A distractor must be wrong: it may not occur in the passage that gives the answer.
        for distractor in example.distractors:
            assert distractor.lower() not in passage.lower()


def test_parse_tutorial__span_count_error_names_file_and_example() -> None:
    data = _raw("syllabus_qa")
    bad = copy.deepcopy(data)
    index = next(i for i, e in enumerate(bad["examples"]) if e["question_type"] == "single factual")
    bad["examples"][index]["answer_spans"].append("Grades are not curved.")
    with pytest.raises(
        ValueError, match=rf"syllabus_qa\.json: examples\[{index}\]: .*2 answer spans, expected 1"
    ):
        parse_tutorial(bad, "syllabus_qa.json", LAYOUTS["syllabus_qa"])


def test_parse_tutorial__wrong_no_answer_text_raises() -> None:
    bad = _raw("syllabus_qa")
    index = next(i for i, e in enumerate(bad["examples"]) if e["question_type"] == "no answer")
    bad["examples"][index]["answer"] = "Not in the syllabus"
    with pytest.raises(ValueError, match=rf"examples\[{index}\]: no answer example must answer"):
        parse_tutorial(bad, "syllabus_qa.json", LAYOUTS["syllabus_qa"])


def test_parse_tutorial__unknown_type_and_key_raise() -> None:
    bad = _raw("syllabus_qa")
    bad["examples"][3]["question_type"] = "trivia"
    with pytest.raises(ValueError, match=r"examples\[3\]: question_type 'trivia'"):
        parse_tutorial(bad, "syllabus_qa.json", LAYOUTS["syllabus_qa"])
    bad = _raw("syllabus_qa")
    bad["examples"][0]["answr"] = "typo"
    with pytest.raises(ValueError, match=r"examples\[0\]: unknown key\(s\) \['answr'\]"):
        parse_tutorial(bad, "syllabus_qa.json", LAYOUTS["syllabus_qa"])


def test_parse_tutorial__missing_type_count_raises() -> None:
    bad = _raw("syllabus_qa")
    bad["examples"] = [e for e in bad["examples"] if e["question_type"] != "summarization"]
    with pytest.raises(ValueError, match="'summarization': 0"):
        parse_tutorial(bad, "syllabus_qa.json", LAYOUTS["syllabus_qa"])


def test_parse_tutorial__too_many_chosen_suggestions_raises() -> None:
    bad = _raw("sciq_distractor")
    for suggestion in bad["examples"][1]["suggestions"][:3]:
        suggestion["chosen"] = True
    with pytest.raises(ValueError, match=r"examples\[1\]: 3 suggestions chosen, at most 2"):
        parse_tutorial(bad, "sciq_distractor.json", LAYOUTS["sciq_distractor"])


def test_parse_tutorial__bad_counterexample_flag_names_path() -> None:
    bad = _raw("sciq_question")
    bad["examples"][0]["counterexamples"][1]["flag"] = "too_long"
    with pytest.raises(ValueError, match=r"examples\[0\]\.counterexamples\[1\]: flag 'too_long'"):
        parse_tutorial(bad, "sciq_question.json", LAYOUTS["sciq_question"])


def test_parse_tutorial__kind_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="expected 'sciq_question'"):
        parse_tutorial(_raw("sciq_distractor"), "sciq_distractor.json", VALIDATIONS, name="sciq_question")


def test_load_tutorial_file__invalid_json_names_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"kind": "syllabus_qa",', encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json: invalid JSON"):
        load_tutorial_file(path, TYPED_PAIRS)


def test_load_tutorial_file__round_trip(tmp_path: Path) -> None:
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(_raw("sciq_question")), encoding="utf-8")
    loaded = load_tutorial_file(path, PASSAGE_QUESTIONS, name="sciq_question")
    assert loaded.source == "custom.json"
    assert loaded.examples == _load("sciq_question").examples
