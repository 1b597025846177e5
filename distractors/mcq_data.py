"""Read real multiple-choice science questions (ARC JSONL, SciQ JSON) as training data for the ranker.

The wrong options of real exam questions are the positive examples of plausible distractors (paper §3.2).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ARC_SPLITS = ("Train", "Dev", "Test")


class McqDataError(ValueError):
    """Raised when a question file cannot be read; the message names the file, row and field."""


@dataclass(frozen=True)
class McqQuestion:
    """One multiple-choice question: stem, correct answer, real distractors and optional support text."""

    qid: str
    question: str
    answer: str
    distractors: tuple[str, ...]
    support: str = ""


def load_arc(
    root: Path, subsets: tuple[str, ...] = ("ARC-Easy", "ARC-Challenge"), splits: tuple[str, ...] = ARC_SPLITS
) -> list[McqQuestion]:
    """Load ARC questions; the options other than ``answerKey`` become the distractors.

    Args:
        root: the ARC folder (holding ARC-Easy/ and ARC-Challenge/).
        subsets: which subsets to read.
        splits: which of Train/Dev/Test to read.

    Returns:
        A list of McqQuestion.

    Raises:
        McqDataError: on a missing file, bad JSON or an answerKey matching no choice.
    """
    questions: list[McqQuestion] = []
    for subset in subsets:
        for split in splits:
            path = Path(root) / subset / f"{subset}-{split}.jsonl"
            if not path.exists():
                raise McqDataError(f"{path}: file not found")
            with path.open(encoding="utf-8") as handle:
                for line_no, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                        stem = row["question"]["stem"]
                        choices = row["question"]["choices"]
                        key = row["answerKey"]
                    except (json.JSONDecodeError, KeyError, TypeError) as exc:
                        raise McqDataError(f"{path} line {line_no}: cannot read question ({exc})") from exc
                    answers = [c["text"] for c in choices if c.get("label") == key]
                    if len(answers) != 1:
                        raise McqDataError(f"{path} line {line_no}: answerKey {key!r} matches no choice")
                    wrong = tuple(c["text"] for c in choices if c.get("label") != key)
                    questions.append(
                        McqQuestion(row.get("id", f"{subset}-{split}-{line_no}"), stem, answers[0], wrong)
                    )
    logger.info("read %d ARC questions from %s", len(questions), root)
    return questions


def load_sciq(root: Path, split: str) -> list[McqQuestion]:
    """Load one SciQ split (``train``, ``valid`` or ``test``).

    Raises:
        McqDataError: on a missing file or a record without one of the six fields.
    """
    path = Path(root) / f"{split}.json"
    if not path.exists():
        raise McqDataError(f"{path}: file not found")
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise McqDataError(f"{path}: invalid JSON ({exc})") from exc
    questions = []
    for i, row in enumerate(rows):
        try:
            distractors = (row["distractor1"], row["distractor2"], row["distractor3"])
            questions.append(
                McqQuestion(
                    f"sciq-{split}-{i}", row["question"], row["correct_answer"], distractors, row["support"]
                )
            )
        except KeyError as exc:
            raise McqDataError(f"{path} record {i}: missing field {exc}") from exc
    logger.info("read %d SciQ %s questions from %s", len(questions), split, path)
    return questions
