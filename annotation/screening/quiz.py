"""A screening quiz graded automatically: pick questions from reference QA pairs, grade the worker's answers.

Why: SyllabusQA screens workers before the main collection (papers/syllabusqa.txt 2.3). Besides the
14 pairs a screening worker writes (which a researcher reviews), a few questions whose answers are
known (the imported SyllabusQA pairs of the same syllabus) show whether the worker read the syllabus.
The worker's answers are graded with the SemEval-2013 lexical-similarity baseline
(:func:`annotation.screening.sra.grade_answer`, papers/semeval2013-student-response-analysis.txt): eight
overlap features against the question and the best reference, fed to a decision tree trained on the 2-way
Beetle + SciEntsBank training data. The grade is advice for the researcher, who still decides.

Thresholds, measured with the classifier the platform uses (Beetle + SciEntsBank 2-way train, 8,910
answers) on the SemEval test splits whose questions it never saw (Beetle unseen questions, 819 answers;
SciEntsBank unseen questions, 733; SciEntsBank unseen domains, 4,562), bucketing accuracy by the
probability of the predicted class:

- :data:`MIN_CONFIDENCE` = 0.6: the tree's leaf purity is its confidence. Below 0.6 its accuracy is
  0.61 / 0.55 / 0.50 on those three splits: a coin flip, so such grades are marked ``uncertain`` and not
  counted as graded. In the 0.6-0.7 band it is 0.72 / 0.70 / 0.66, above 0.9 0.97 / 0.70 / 0.88.
- :data:`MIN_CORRECT_TO_PASS` = 1: the grader is conservative. On SemEval it calls a wrong answer
  correct 18% / 7% / 9% of the time but recognises only 59% / 24% / 28% of the right ones (it misses
  paraphrases). On real SyllabusQA quizzes (``benchmarks/screening_grader.py``) it is more so: another
  question's answer is graded correct 1.0% of the time, a right answer in other words 15-21%. So one
  "correct" is strong evidence that the worker read the syllabus and an "incorrect" is weak evidence:
  the suggestion is ``pass`` with at least one answer graded correct and ``check`` otherwise. Asking for
  two of three correct would send about 9 in 10 honest workers to ``check`` (at a 20% rate).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from annotation import question_types as qt
from annotation.screening.sra import CORRECT, grade_answer

logger = logging.getLogger(__name__)

DEFAULT_QUIZ_QUESTIONS = 3
"""Quiz questions per screening HIT unless the researcher says otherwise (``launch_batch --quiz N``)."""
MAX_QUIZ_QUESTIONS = 10
"""Upper bound of ``--quiz N``: the quiz is a check, not a second task."""
MIN_CONFIDENCE = 0.6
"""Grades below this classifier confidence are ``uncertain`` (see the module docstring for why)."""
MIN_CORRECT_TO_PASS = 1
"""The summary suggests ``pass`` when at least this many answers are graded correct (see the docstring)."""

INCORRECT = "incorrect"
UNCERTAIN = "uncertain"
UNANSWERED = "unanswered"


@dataclass(frozen=True)
class QuizCandidate:
    """A reference QA pair that may become a quiz question.

    Attributes:
        pair_id: the pair's id (a QAPair pk, or the release's id): the tie-breaker of the seeded choice.
        question_type: a SyllabusQA type (``annotation.question_types``).
        question: the question text.
        answer: the reference answer.
        spans: answer spans copied from the document (also accepted as references).
    """

    pair_id: str
    question_type: str
    question: str
    answer: str
    spans: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuizQuestion:
    """A chosen quiz question with every acceptable reference answer."""

    pair_id: str
    question_type: str
    question: str
    references: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (stored in ``Batch.options``)."""
        return {**asdict(self), "references": list(self.references)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuizQuestion:
        """Read back what :meth:`to_dict` wrote.

        Raises:
            ValueError: naming the missing key.
        """
        try:
            return cls(
                pair_id=str(data["pair_id"]),
                question_type=str(data["question_type"]),
                question=str(data["question"]),
                references=tuple(str(r) for r in data["references"]),
            )
        except KeyError as exc:
            raise ValueError(f"quiz question {data!r}: missing key {exc}") from exc


@dataclass(frozen=True)
class QuizAnswer:
    """One quiz question as answered by a worker (the grader's input)."""

    question: str
    answer: str
    references: tuple[str, ...]


@dataclass(frozen=True)
class QuizItemGrade:
    """The grade of one quiz answer.

    Attributes:
        label: ``correct``, ``incorrect``, ``uncertain`` (confidence below :data:`MIN_CONFIDENCE`) or
            ``unanswered``.
        predicted: the classifier's own label (``correct``/``incorrect``), empty when unanswered.
        confidence: the classifier's probability of ``predicted`` (None when unanswered).
        best_reference: the reference closest to the answer (overlap F1).
        features: the eight lexical features.
    """

    label: str
    predicted: str
    confidence: Optional[float]
    best_reference: Optional[str]
    features: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class QuizSummary:
    """The grades of a quiz and how many were correct.

    Attributes:
        items: one grade per question, in quiz order.
        n_questions: quiz questions.
        n_graded: answers with a grade: correct or incorrect with enough confidence, or unanswered
            (which counts as incorrect); ``uncertain`` ones are left out.
        n_correct: answers graded correct.
        suggestion: ``pass`` / ``check`` (advice only), or None when nothing could be graded.
    """

    items: tuple[QuizItemGrade, ...]
    n_questions: int
    n_graded: int
    n_correct: int
    suggestion: Optional[str]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def usable_answer(answer: str) -> bool:
    """True for a non-empty answer that is not SyllabusQA's fixed "No/insufficient information"."""
    text = " ".join(answer.split()).strip().lower()
    return bool(text) and text != qt.NO_ANSWER_TEXT.lower()


def choose_questions(candidates: Sequence[QuizCandidate], n: int, seed: int = 0) -> list[QuizQuestion]:
    """Pick ``n`` quiz questions, spread over question types, the same ones for the same seed and pairs.

    No-answer pairs (and any pair whose answer is empty or the fixed no-answer text) are skipped: a
    worker cannot be graded against "No/insufficient information" by lexical overlap. The candidates
    are sorted by id first, so the choice does not depend on the order they come in. Types are visited
    round-robin in a seeded order, one pair per type per round, so three questions are three types
    whenever the syllabus has three usable types.

    Args:
        candidates: the reference pairs of one document.
        n: how many questions (0 gives none).
        seed: the random seed (e.g. the batch seed plus the document id).

    Returns:
        At most ``n`` questions (fewer when there are not enough usable pairs).

    Raises:
        ValueError: when ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"quiz size must not be negative, got {n}")
    usable = [
        c
        for c in candidates
        if c.question_type != qt.NO_ANSWER and c.question.strip() and usable_answer(c.answer)
    ]
    if n == 0 or not usable:
        return []
    rng = random.Random(seed)
    by_type: dict[str, list[QuizCandidate]] = {}
    for candidate in sorted(usable, key=lambda c: (_id_key(c.pair_id), c.question)):
        by_type.setdefault(candidate.question_type, []).append(candidate)
    for pairs in by_type.values():
        rng.shuffle(pairs)
    order = sorted(by_type)
    rng.shuffle(order)
    chosen: list[QuizCandidate] = []
    while len(chosen) < n and any(by_type[t] for t in order):
        for qtype in order:
            if by_type[qtype] and len(chosen) < n:
                chosen.append(by_type[qtype].pop())
    return [
        QuizQuestion(c.pair_id, c.question_type, c.question.strip(), _references(c.answer, c.spans))
        for c in chosen
    ]


def _id_key(pair_id: str) -> tuple[int, int, str]:
    """Sort numeric ids numerically ("9" before "10"), then other ids as text."""
    return (0, int(pair_id), "") if pair_id.isdecimal() and pair_id.isascii() else (1, 0, pair_id)


def _references(answer: str, spans: Sequence[str]) -> tuple[str, ...]:
    """The answer, then each distinct span (an answer copied from the syllabus is also right)."""
    references: list[str] = []
    for text in (answer, *spans):
        text = text.strip()
        if text and text not in references:
            references.append(text)
    return tuple(references)


def grade_item(item: QuizAnswer, classifier: Any) -> QuizItemGrade:
    """Grade one answer with the lexical classifier; low confidence becomes ``uncertain``.

    Raises:
        ValueError: when the question has no reference answer.
    """
    if not item.answer.strip():
        return QuizItemGrade(UNANSWERED, "", None, None, {})
    grade = grade_answer(item.answer, item.question, item.references, classifier)
    label = grade.label if grade.confidence >= MIN_CONFIDENCE else UNCERTAIN
    return QuizItemGrade(label, grade.label, grade.confidence, grade.best_reference, grade.features)


def grade_quiz(items: Sequence[QuizAnswer], classifier: Any) -> QuizSummary:
    """Grade every quiz answer and count them (see the module docstring for the thresholds).

    Args:
        items: the questions with the worker's answers and their references.
        classifier: a model from :func:`annotation.screening.sra.train_classifier`.

    Returns:
        The :class:`QuizSummary`; ``suggestion`` is None when no answer could be graded.
    """
    grades = tuple(grade_item(item, classifier) for item in items)
    graded = [g for g in grades if g.label in (CORRECT, INCORRECT, UNANSWERED)]
    n_correct = sum(1 for g in grades if g.label == CORRECT)
    suggestion: Optional[str] = None
    if graded:
        suggestion = "pass" if n_correct >= MIN_CORRECT_TO_PASS else "check"
    return QuizSummary(grades, len(items), len(graded), n_correct, suggestion)
