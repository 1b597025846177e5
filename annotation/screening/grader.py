"""The screening quiz's grader: the SemEval-2013 lexical classifier, trained once and cached, and its use.

The classifier (:func:`annotation.screening.sra.train_classifier`, 8 overlap features + decision tree) is
trained on the 2-way SemEval-2013 training data (Beetle + SciEntsBank, 8,910 answers, ~2 s) the first
time a quiz is graded, then kept as a joblib file under ``<CROWDQA_VAR_DIR>/answer_grader/`` whose name
holds a hash of the training files, so it is trained once per data version (and again only when the
files change or the file cannot be read, e.g. after a scikit-learn upgrade). In the process it is also
kept in memory.

The data is found at ``CROWDQA_SEMEVAL_DIR`` (environment or setting), else at ``semeval2013_sra`` in
the shared data folder (:func:`config.shared_data.dataset_dir`, ``CROWDQA_SHARED_DATA``). Without it a
quiz is stored as ``ungraded`` with the reason: grading never breaks a submission.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from django.conf import settings
from django.db import transaction

from annotation.hits import handler_for
from annotation.models import Assignment, ScreeningGrade
from annotation.screening.quiz import QuizAnswer, grade_quiz
from annotation.screening.sra import examples, load_split
from annotation.services.batches import quiz_answer_field, quiz_questions_for
from config.atomic import atomic_write
from config.shared_data import dataset_dir

logger = logging.getLogger(__name__)

TRAIN_CORPORA = ("beetle", "sciEntsBank")
TASK_FOLDER = "semeval2013-task7"
_memory: dict[str, Any] = {}
_lock = threading.Lock()


class GraderUnavailable(RuntimeError):
    """The classifier cannot be had (no SemEval data, unreadable files); the message says why."""


@dataclass(frozen=True)
class TrainedGrader:
    """A fitted classifier and the key of the data it was trained on."""

    classifier: Any
    key: str


def semeval_root() -> Optional[Path]:
    """The SemEval-2013 folder holding ``training/`` (``.../semeval2013-task7``), or None when absent.

    ``CROWDQA_SEMEVAL_DIR`` may name either the dataset folder or its ``semeval2013-task7`` subfolder.
    """
    configured = os.environ.get("CROWDQA_SEMEVAL_DIR") or getattr(settings, "CROWDQA_SEMEVAL_DIR", "")
    base = Path(configured) if configured else dataset_dir("semeval2013_sra")
    if base is None:
        return None
    for candidate in (base / TASK_FOLDER, base):
        if (candidate / "training" / "2way").is_dir():
            return candidate
    return None


def training_files(root: Path) -> list[Path]:
    """The 2-way training XML files of both corpora, sorted (what the classifier is trained on)."""
    return sorted(
        path for corpus in TRAIN_CORPORA for path in (root / "training" / "2way" / corpus).glob("*.xml")
    )


def data_key(root: Path, files: list[Path]) -> str:
    """SHA-256 (first 16 hex digits) of the training files' relative paths and bytes: the cache key."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """Where trained graders are kept: ``<CROWDQA_VAR_DIR>/answer_grader``."""
    return Path(settings.VAR_DIR) / "answer_grader"


def load_grader() -> TrainedGrader:
    """The trained classifier: from memory, else the joblib cache, else trained now and cached.

    Raises:
        GraderUnavailable: when the SemEval data is absent or has no training files.
    """
    import joblib

    root = semeval_root()
    if root is None:
        raise GraderUnavailable(
            "SemEval-2013 data not found (set CROWDQA_SEMEVAL_DIR or CROWDQA_SHARED_DATA to the folder "
            "holding semeval2013_sra)"
        )
    files = training_files(root)
    if not files:
        raise GraderUnavailable(f"{root}/training/2way has no {'/'.join(TRAIN_CORPORA)} XML files")
    key = f"sra-2way-{data_key(root, files)}"
    with _lock:
        if key in _memory:
            return TrainedGrader(_memory[key], key)
        path = cache_dir() / f"{key}.joblib"
        classifier = None
        if path.is_file():
            try:
                classifier = joblib.load(path)
            except Exception as exc:  # noqa: BLE001 - any unreadable cache (version skew, truncation) retrains
                logger.warning("answer grader cache %s unreadable (%s); training again", path, exc)
        if classifier is None:
            classifier = _train(root)
            try:
                with atomic_write(path, "wb") as handle:
                    joblib.dump(classifier, handle)
                logger.info("trained the answer grader %s and cached it at %s", key, path)
            except OSError as exc:
                logger.warning("answer grader %s trained but not cached at %s: %s", key, path, exc)
        _memory[key] = classifier
        return TrainedGrader(classifier, key)


def _train(root: Path) -> Any:
    """Fit the SemEval baseline on Beetle + SciEntsBank 2-way train (as benchmarks/eval_sra_baseline.py)."""
    from annotation.screening.sra import train_classifier

    try:
        questions = [q for corpus in TRAIN_CORPORA for q in load_split(root, corpus, "train", "2way")]
    except (FileNotFoundError, ValueError) as exc:
        raise GraderUnavailable(f"cannot read the SemEval training data: {exc}") from exc
    rows, labels, _ = examples(questions)
    return train_classifier(rows, labels)


def grade_screening_assignment(assignment: Assignment) -> Optional[ScreeningGrade]:
    """Grade a screening submission's quiz, or a syllabus QA submission's known-answer questions, and
    store it (one row per assignment, updated on a re-run).

    Args:
        assignment: a submitted (or reviewed) assignment of a screening or syllabus QA batch.

    Returns:
        The stored grade, or None when the assignment is not a screening one or its HIT has no quiz.
    """
    hit = assignment.hit
    handler = handler_for(hit.batch.kind)
    if not (handler.has_quiz or handler.gold_quiz):
        return None
    questions = quiz_questions_for(hit)
    if not questions:
        logger.info("Assignment(%s): HIT(%s) has no quiz; nothing to grade", assignment.pk, hit.pk)
        return None
    answers = assignment.answers or {}
    items = [
        QuizAnswer(q.question, str(answers.get(quiz_answer_field(k), "") or ""), q.references)
        for k, q in enumerate(questions)
    ]
    defaults: dict[str, Any]
    try:
        grader = load_grader()
    except GraderUnavailable as exc:
        logger.warning("Assignment(%s): quiz not graded: %s", assignment.pk, exc)
        defaults = {
            "status": ScreeningGrade.Status.UNGRADED,
            "reason": str(exc),
            "n_questions": len(items),
            "n_graded": 0,
            "n_correct": 0,
            "suggestion": "",
            "items": [_item_row(q, item, None) for q, item in zip(questions, items, strict=True)],
            "classifier": "",
        }
    else:
        summary = grade_quiz(items, grader.classifier)
        defaults = {
            "status": ScreeningGrade.Status.GRADED,
            "reason": "",
            "n_questions": summary.n_questions,
            "n_graded": summary.n_graded,
            "n_correct": summary.n_correct,
            "suggestion": summary.suggestion or "",
            "items": [
                _item_row(q, item, grade)
                for q, item, grade in zip(questions, items, summary.items, strict=True)
            ],
            "classifier": grader.key,
        }
    with transaction.atomic():
        grade, _ = ScreeningGrade.objects.update_or_create(assignment=assignment, defaults=defaults)
    logger.info("Assignment(%s): quiz %s", assignment.pk, grade.score_label)
    return grade


def _item_row(question: Any, item: QuizAnswer, grade: Any) -> dict[str, Any]:
    """One quiz question as stored on :class:`ScreeningGrade` (what the review page shows)."""
    row: dict[str, Any] = {
        "question": question.question,
        "question_type": question.question_type,
        "pair_id": question.pair_id,
        "answer": item.answer,
        "references": list(item.references),
        "label": "",
        "predicted": "",
        "confidence": None,
        "best_reference": item.references[0] if item.references else None,
    }
    if grade is not None:
        row.update(
            label=grade.label,
            predicted=grade.predicted,
            confidence=grade.confidence,
            best_reference=grade.best_reference or row["best_reference"],
        )
    return row
