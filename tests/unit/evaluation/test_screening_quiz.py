"""The screening quiz's pure logic: choosing questions from real SyllabusQA pairs, grading with SemEval."""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from annotation import question_types as qt
from annotation.screening.quiz import (
    INCORRECT,
    MIN_CONFIDENCE,
    UNANSWERED,
    UNCERTAIN,
    QuizAnswer,
    QuizCandidate,
    QuizQuestion,
    choose_questions,
    grade_item,
    grade_quiz,
)
from annotation.screening.sra import CORRECT, examples, load_split, train_classifier

SYLLABUS = "Syllabus_Marine_Microbiome_2022_redacted"


@pytest.fixture(scope="session")
def sra_classifier() -> Any:
    """The SemEval-2013 2-way lexical tree on Beetle + SciEntsBank train (about 2 s, once per session)."""
    from config.shared_data import dataset_dir
    from tests.conftest import _locate

    _locate("semeval2013_sra")
    root = dataset_dir("semeval2013_sra")
    assert root is not None
    task = root / "semeval2013-task7"
    rows, labels, _ = examples(load_split(task, "beetle") + load_split(task, "sciEntsBank"))
    return train_classifier(rows, labels)


def syllabus_candidates(root: Path, name: str = SYLLABUS) -> list[QuizCandidate]:
    """Every released QA pair of one syllabus (all splits) as quiz candidates."""
    out = []
    for split in ("train", "val", "test"):
        with (root / "data" / "dataset_split" / f"{split}.csv").open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["syllabus_name"] == name:
                    spans = tuple(row[f"answer_span_{k}"] for k in range(1, 6) if row[f"answer_span_{k}"])
                    out.append(
                        QuizCandidate(row["id"], row["question_type"], row["question"], row["answer"], spans)
                    )
    return out


def test_choose_questions__deterministic_spread_and_no_answer_skipped(
    shared_data: Callable[[str], Path],
) -> None:
    candidates = syllabus_candidates(shared_data("syllabusqa"))
    assert any(c.question_type == qt.NO_ANSWER for c in candidates)
    shuffled = list(candidates)
    random.Random(1).shuffle(shuffled)
    first = choose_questions(candidates, 3, seed=7)
    assert first == choose_questions(shuffled, 3, seed=7)
    assert len(first) == 3
    assert len({q.question_type for q in first}) == 3
    by_id = {c.pair_id: c for c in candidates}
    for question in first:
        assert question.question_type != qt.NO_ANSWER
        source = by_id[question.pair_id]
        assert question.references[0] == source.answer.strip()
        assert question.question == source.question.strip()
    usable_types = {c.question_type for c in candidates} - {qt.NO_ANSWER}
    many = choose_questions(candidates, len(usable_types), seed=7)
    assert {q.question_type for q in many} == usable_types
    seeds = {tuple(q.pair_id for q in choose_questions(candidates, 3, seed=s)) for s in range(5)}
    assert len(seeds) > 1


def test_choose_questions__skips_empty_and_fixed_no_answer_text() -> None:
    candidates = [
        QuizCandidate("1", qt.NO_ANSWER, "Is there a field trip?", qt.NO_ANSWER_TEXT),
        QuizCandidate("2", qt.SINGLE_FACTUAL, "Who teaches it?", "  "),
        QuizCandidate("3", qt.SINGLE_FACTUAL, "When is the exam?", "no/insufficient  information"),
        QuizCandidate("4", qt.YES_NO, "Are labs graded?", "Yes", ("Labs are 40% of the grade.", "Yes")),
    ]
    chosen = choose_questions(candidates, 3)
    assert chosen == [QuizQuestion("4", qt.YES_NO, "Are labs graded?", ("Yes", "Labs are 40% of the grade."))]
    assert choose_questions(candidates, 0) == []
    assert choose_questions(candidates[:3], 3) == []
    with pytest.raises(ValueError, match="negative"):
        choose_questions(candidates, -1)


def test_quiz_question__round_trips_and_names_missing_key() -> None:
    question = QuizQuestion(
        "12", qt.SINGLE_FACTUAL, "When is the final?", ("May 5", "The final is on May 5.")
    )
    assert QuizQuestion.from_dict(question.to_dict()) == question
    with pytest.raises(ValueError, match="references"):
        QuizQuestion.from_dict({"pair_id": "1", "question_type": "yes/no", "question": "q"})


def test_grade_quiz__summary_counts_the_item_labels(sra_classifier: Any) -> None:
    reference = "The final exam is worth 40 percent of the course grade and is held in week 15."
    items = [
        QuizAnswer("How much is the final exam worth?", reference, (reference,)),
        QuizAnswer("How much is the final exam worth?", "I like to go hiking with my dog.", (reference,)),
        QuizAnswer("When is the final exam?", "   ", (reference,)),
    ]
    summary = grade_quiz(items, sra_classifier)
    labels = [g.label for g in summary.items]
    assert labels[0] == CORRECT and summary.items[0].best_reference == reference
    assert labels[1] == INCORRECT and summary.items[1].confidence >= MIN_CONFIDENCE
    assert labels[2] == UNANSWERED and summary.items[2].confidence is None
    assert summary.n_questions == 3
    assert summary.n_correct == labels.count(CORRECT) == 1
    assert summary.n_graded == 3
    assert summary.suggestion == "pass"  # one answer graded correct is strong evidence
    wrong_only = grade_quiz(items[1:], sra_classifier)
    assert (wrong_only.n_correct, wrong_only.suggestion) == (0, "check")
    assert summary.to_dict()["items"][0]["label"] == CORRECT


class _CoinFlip:
    """A classifier double whose best class is only 55% likely (tests the uncertainty threshold)."""

    classes_ = (CORRECT, INCORRECT)

    def predict_proba(self, rows: list[list[float]]) -> Any:
        import numpy as np

        return np.array([[0.55, 0.45] for _ in rows])


def test_grade_item__low_confidence_is_uncertain_and_not_graded() -> None:
    item = QuizAnswer("Who teaches the course?", "Dr. Smith", ("Professor Smith teaches it.",))
    grade = grade_item(item, _CoinFlip())
    assert grade.label == UNCERTAIN and grade.predicted == CORRECT and grade.confidence == pytest.approx(0.55)
    summary = grade_quiz([item], _CoinFlip())
    assert (summary.n_graded, summary.n_correct, summary.suggestion) == (0, 0, None)
