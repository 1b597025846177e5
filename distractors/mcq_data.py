"""Real multiple-choice science questions (ARC JSONL, SciQ JSON) as training data for the ranker.

The wrong options of real exam questions are the positive examples of plausible distractors (paper §3.2).
Reading and validating the files is the importers' job (``annotation.importers.mcq``, no Django); this
module only gives the ranker the shape it trains on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from annotation.importers.errors import ImportDataError
from annotation.importers.mcq import ARC_SUBSETS, MCQRow, read_arc, read_sciq

logger = logging.getLogger(__name__)

#: ARC file-name suffixes and the split names the importer uses for them.
ARC_SPLITS = ("Train", "Dev", "Test")
_ARC_SPLIT_NAMES = {"Train": "train", "Dev": "val", "Test": "test"}
_SCIQ_SPLIT_NAMES = {"train": "train", "valid": "val", "val": "val", "test": "test"}

#: Raised when a question file cannot be read; the message names the file, row and field.
McqDataError = ImportDataError


@dataclass(frozen=True)
class McqQuestion:
    """One multiple-choice question: stem, correct answer, real distractors and optional support text."""

    qid: str
    question: str
    answer: str
    distractors: tuple[str, ...]
    support: str = ""


def _question(record: MCQRow) -> McqQuestion:
    return McqQuestion(record.id, record.question, record.answer, record.distractors, record.passage)


def load_arc(
    root: Path, subsets: tuple[str, ...] = ARC_SUBSETS, splits: tuple[str, ...] = ARC_SPLITS
) -> list[McqQuestion]:
    """Load ARC questions; the options other than ``answerKey`` become the distractors.

    Args:
        root: folder holding ``ARC-Easy/`` and ``ARC-Challenge/``.
        subsets: which subsets to read.
        splits: which of Train/Dev/Test to read.

    Raises:
        McqDataError: on a missing file, bad JSON or an answerKey matching no choice.
    """
    records = read_arc(Path(root), subsets, tuple(_ARC_SPLIT_NAMES[s] for s in splits))
    logger.info("read %d ARC questions from %s", len(records), root)
    return [_question(r) for r in records]


def load_sciq(root: Path, split: str) -> list[McqQuestion]:
    """Load one SciQ split (``train``, ``valid`` or ``test``).

    Raises:
        McqDataError: on a missing file or a record without one of the six fields.
    """
    records = read_sciq(Path(root), (_SCIQ_SPLIT_NAMES[split],))
    logger.info("read %d SciQ %s questions from %s", len(records), split, root)
    return [_question(r) for r in records]
