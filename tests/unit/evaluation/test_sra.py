"""Tests for annotation/screening/sra.py (SemEval-2013 reader, lexical features, decision tree, P/R/F1)."""

from __future__ import annotations

import pytest

from annotation.screening.sra import (
    examples,
    features,
    grade_answer,
    load_split,
    overlap_scores,
    parse_question_file,
    prf_report,
    train_classifier,
)

XML_5WAY = """<?xml version="1.0"?>
<question id="Q1" module="EM">
  <questionText>How did you separate the salt from the water?</questionText>
  <referenceAnswers>
    <referenceAnswer id="r1" category="BEST">The water was evaporated, leaving the salt.</referenceAnswer>
  </referenceAnswers>
  <studentAnswers>
    <studentAnswer id="s1" accuracy="correct">Let the water evaporate and the salt is left.</studentAnswer>
    <studentAnswer id="s2" accuracy="contradictory">The salt evaporated.</studentAnswer>
  </studentAnswers>
</question>"""


def test_parse_question_file__reads_a_5way_file(tmp_path) -> None:
    path = tmp_path / "Q1.xml"
    path.write_text(XML_5WAY)
    question = parse_question_file(path)
    assert question.id == "Q1" and question.references[0].category == "BEST"
    assert [a.label for a in question.answers] == ["correct", "contradictory"]


def test_parse_question_file__names_the_file_and_answer(tmp_path) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(XML_5WAY.replace(' accuracy="contradictory"', ""))
    with pytest.raises(ValueError, match=r"bad.xml: studentAnswer id='s2'"):
        parse_question_file(path)


def test_overlap_scores__identical_and_disjoint() -> None:
    raw, f1, lesk, cosine = overlap_scores(["a", "b", "c"], ["a", "b", "c"])
    assert (raw, f1, lesk, cosine) == (3.0, 1.0, 1.0, 1.0)
    assert overlap_scores(["x"], ["y"]) == (0.0, 0.0, 0.0, 0.0)


def test_features__best_reference_per_feature() -> None:
    row = features(
        "the bulb is in a closed path",
        "Why does bulb A light?",
        ["bulb A is in a closed path", "unrelated words"],
    )
    assert len(row) == 8
    assert row[4] == 6.0  # "bulb ... is in a closed path": 6 words overlap the first reference
    assert row[0] == 2.0  # "the bulb" is not in the question, "bulb" is; "a" matches "A"


def test_prf_report__corrective_feedback_and_weighted_micro() -> None:
    gold = ["correct", "correct", "contradictory", "irrelevant"]
    pred = ["correct", "contradictory", "irrelevant", "irrelevant"]
    report = prf_report(gold, pred)
    assert report["per_class"]["correct"] == {"p": 1.0, "r": 0.5, "f": pytest.approx(2 / 3), "support": 2}
    # any non-correct prediction on a non-correct gold counts, even with the wrong class
    assert report["corrective_feedback"]["r"] == 1.0
    assert report["corrective_feedback"]["p"] == pytest.approx(2 / 3)
    assert report["micro"]["r"] == pytest.approx(report["accuracy"])


def test_lexical_baseline__beats_majority_on_real_beetle(shared_data) -> None:
    root = shared_data("semeval2013_sra") / "semeval2013-task7"
    rows, labels, _ = examples(load_split(root, "beetle", "train"))
    model = train_classifier(rows, labels)
    test_rows, test_labels, _ = examples(load_split(root, "beetle", "unseen_answers"))
    report = prf_report(test_labels, [str(p) for p in model.predict(test_rows)])
    majority = max(test_labels.count(label) for label in set(test_labels)) / len(test_labels)
    assert report["accuracy"] > majority + 0.05
    question = load_split(root, "beetle", "unseen_questions")[0]
    grade = grade_answer(
        question.answers[0].text, question.text, [r.text for r in question.references], model
    )
    assert grade.label in {"correct", "incorrect"} and 0.0 <= grade.confidence <= 1.0
    assert grade.best_reference in {r.text for r in question.references}


def test_grade_answer__needs_a_reference() -> None:
    with pytest.raises(ValueError, match="at least one reference"):
        grade_answer("a", "q", [], classifier=None)
