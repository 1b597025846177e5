"""Heuristic QC of SciQ-style multiple-choice items (Welbl et al. 2017, sections 3.1-3.2).

Why: the paper asks workers for questions of 6-30 words, short answers (up to 3 words), no yes/no
questions, answers clear from the chosen passage; stage 2 keeps 3 distractors, at least one written by
the worker. Each check returns its code (docs/reference/codes.md); most are errors a worker can fix on
the HIT form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from annotation.qc.common import ERROR, QCIssue, flags_of, fold, issue, word_count

_AUXILIARIES = frozenset(
    "is are was were am be do does did have has had can could will would shall should may might must "
    "isn't aren't wasn't weren't don't doesn't didn't haven't hasn't hadn't can't couldn't won't wouldn't "
    "shouldn't".split()
)


@dataclass(frozen=True)
class SciQItem:
    """One SciQ-style item (a ``run_qc`` input line, or the SciQ question/distractor HIT's fields).

    Attributes:
        id: the item's id.
        question: the question text.
        answer: the correct answer.
        passage: the supporting passage ("" when unknown: the passage check is skipped).
        distractors: all distractors (chosen suggestions and the worker's own).
        worker_distractors: the distractors the worker wrote, or None when unknown (check skipped).
    """

    id: str
    question: str
    answer: str
    passage: str = ""
    distractors: tuple[str, ...] = ()
    worker_distractors: Optional[tuple[str, ...]] = None


@dataclass(frozen=True)
class SciQOptions:
    """Thresholds of SciQ QC (defaults from the paper).

    Attributes:
        min_question_words: shorter questions fire ``question_length``.
        max_question_words: longer questions fire ``question_length``.
        max_answer_words: longer answers fire ``answer_length``.
        distractor_count: the number of distractors an item must have.
        check_distractors: False for a stage-1 item (question + answer only).
    """

    min_question_words: int = 6
    max_question_words: int = 30
    max_answer_words: int = 3
    distractor_count: int = 3
    check_distractors: bool = True


@dataclass(frozen=True)
class SciQResult:
    """QC outcome for one item (the ``run_qc`` output line plus issue details).

    Attributes:
        id: the item's id.
        flags: distinct codes, in the order found.
        normalized_answer: the answer with surrounding whitespace removed.
        issues: every finding with severity, field and message.
    """

    id: str
    flags: tuple[str, ...]
    normalized_answer: str
    issues: tuple[QCIssue, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> tuple[QCIssue, ...]:
        """Issues the worker must fix at submit time."""
        return tuple(i for i in self.issues if i.severity == ERROR)

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "flags", "normalized_answer", "issues"}`` for JSON output."""
        return {
            "id": self.id,
            "flags": list(self.flags),
            "normalized_answer": self.normalized_answer,
            "issues": [i.to_dict() for i in self.issues],
        }


def is_yes_no_question(question: str, answer: str) -> bool:
    """True for a polar question: the answer is yes/no, or it opens with an auxiliary and offers no "or".

    "Is a whale a fish or a mammal?" is an alternative question and passes.
    """
    if fold(answer) in ("yes", "no"):
        return True
    words = question.lower().replace("’", "'").split()
    return bool(words) and words[0] in _AUXILIARIES and " or " not in f" {fold(question)} "


def _squash(text: str) -> str:
    """Letters and digits only: SciQ passages contain joined words ("calledoxidants")."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _distractor_issues(
    item: SciQItem, answer: str, folded_answer: str, options: SciQOptions
) -> list[QCIssue]:
    """The distractors' issues: one equals the answer, two are the same, too many or too few, none the
    worker's own."""
    issues: list[QCIssue] = []
    distractors = [d.strip() for d in item.distractors if d and d.strip()]
    folded = [fold(d) for d in distractors]
    if folded_answer and folded_answer in folded:
        issues.append(
            issue("distractor_equals_answer", "distractors", f"a distractor equals the answer {answer!r}")
        )
    if len(set(folded)) < len(folded):
        issues.append(issue("duplicate_distractor", "distractors", "two distractors are the same"))
    if len(distractors) != options.distractor_count:
        issues.append(
            issue(
                "distractor_count",
                "distractors",
                f"{len(distractors)} distractors given, expected {options.distractor_count}",
            )
        )
    if item.worker_distractors is not None and not any(d.strip() for d in item.worker_distractors):
        issues.append(issue("no_worker_distractor", "distractors", "write at least one distractor yourself"))
    return issues


def check_item(item: SciQItem, options: Optional[SciQOptions] = None) -> SciQResult:
    """Run every SciQ check on one item.

    Args:
        item: the item.
        options: thresholds.

    Returns:
        The result with all flags.
    """
    options = options or SciQOptions()
    issues: list[QCIssue] = []

    def flag(code: str, field_name: str, message: str) -> None:
        issues.append(issue(code, field_name, message))

    answer = item.answer.strip()
    n_question = word_count(item.question)
    if not options.min_question_words <= n_question <= options.max_question_words:
        issues.append(
            issue(
                "question_length",
                "question",
                f"question has {n_question} words, expected "
                f"{options.min_question_words}-{options.max_question_words}",
            )
        )
    n_answer = word_count(answer)
    if n_answer > options.max_answer_words:
        flag("answer_length", "answer", f"answer has {n_answer} words, at most {options.max_answer_words}")
    if is_yes_no_question(item.question, answer):
        flag("yes_no_question", "question", "yes/no questions are not allowed")
    if item.passage.strip() and answer and _squash(answer) not in _squash(item.passage):
        flag("answer_not_in_passage", "answer", f"answer {answer!r} does not occur in the passage")
    folded_answer = fold(answer)
    if folded_answer and re.search(rf"\b{re.escape(folded_answer)}\b", fold(item.question)):
        flag("answer_in_question", "answer", f"the question gives away the answer {answer!r}")

    if options.check_distractors:
        issues += _distractor_issues(item, answer, folded_answer, options)
    flags = tuple(flags_of(issues))
    return SciQResult(id=item.id, flags=flags, normalized_answer=answer, issues=tuple(issues))
