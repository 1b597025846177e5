"""SemEval-2013 Student Response Analysis: data reader, lexical-similarity baseline and answer grading.

The baseline of Dzikovska et al. (2012, section 3.2): eight lexical-similarity features (raw word
overlap, overlap F1, Lesk score, cosine) of the student answer against the question and against the best
matching reference answer (the highest value of each feature over the references), fed to a decision
tree. The original used Perl's ``Text::Similarity::Overlaps`` and Weka's J48 (pruned C4.5). Here:

- overlaps are the matching token blocks of ``difflib.SequenceMatcher`` (longest common phrase first,
  then recursively left and right of it; Text::Similarity also lets phrases cross, a small difference);
  raw = words in overlaps, F1 from precision raw/|answer| and recall raw/|reference|,
  Lesk = sum of squared phrase lengths / (|answer| * |reference|),
  cosine = raw / sqrt(|answer| * |reference|);
- the tree is scikit-learn's CART with entropy splits and ``min_samples_leaf=2`` (J48's minNumObj) and
  cost-complexity pruning standing in for C4.5's pessimistic pruning.

Evaluation reports per-class P/R/F1, the macro average, the paper's "micro" average (per-class scores
weighted by class size, so micro recall equals accuracy) and the binary "corrective feedback" view (any
label other than ``correct`` asks for feedback).
"""

from __future__ import annotations

import logging
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Optional

logger = logging.getLogger(__name__)

LABELS_5WAY: tuple[str, ...] = (
    "correct",
    "partially_correct_incomplete",
    "contradictory",
    "irrelevant",
    "non_domain",
)
LABELS_2WAY: tuple[str, ...] = ("correct", "incorrect")
CORRECT = "correct"
FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{target}_{name}" for target in ("question", "reference") for name in ("raw", "f1", "lesk", "cosine")
)
TEST_SPLITS = {
    "unseen_answers": "test-unseen-answers",
    "unseen_questions": "test-unseen-questions",
    "unseen_domains": "test-unseen-domains",
}
_WORD_RE = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class ReferenceAnswer:
    """One expected answer (Beetle adds a category: BEST, GOOD, MINIMAL, KEYWORD)."""

    id: str
    text: str
    category: Optional[str] = None


@dataclass(frozen=True)
class StudentAnswer:
    """One student response with its gold label (2-way or 5-way)."""

    id: str
    text: str
    label: str


@dataclass(frozen=True)
class SraQuestion:
    """One question file: text, reference answers and labelled student answers."""

    id: str
    module: Optional[str]
    text: str
    references: tuple[ReferenceAnswer, ...]
    answers: tuple[StudentAnswer, ...]


def parse_question_file(path: str | Path) -> SraQuestion:
    """Parse one SemEval-2013 Task 7 XML question file (2-way or 5-way: same format).

    Raises:
        ValueError: naming the file and what is missing or malformed.
    """
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as error:
        raise ValueError(f"{path}: not well-formed XML: {error}") from error
    question_id = root.get("id")
    text_node = root.find("questionText")
    if root.tag != "question" or not question_id or text_node is None:
        raise ValueError(f"{path}: expected <question id=...> with <questionText>")
    references = tuple(
        ReferenceAnswer(node.get("id", ""), (node.text or "").strip(), node.get("category"))
        for node in root.iterfind("referenceAnswers/referenceAnswer")
    )
    answers = []
    for node in root.iterfind("studentAnswers/studentAnswer"):
        label = node.get("accuracy")
        if not label:
            raise ValueError(f"{path}: studentAnswer id={node.get('id')!r} has no accuracy attribute")
        answers.append(StudentAnswer(node.get("id", ""), (node.text or "").strip(), label))
    if not references:
        raise ValueError(f"{path}: question {question_id} has no referenceAnswer")
    return SraQuestion(
        question_id, root.get("module"), (text_node.text or "").strip(), references, tuple(answers)
    )


def load_split(root: str | Path, corpus: str, split: str = "train", ways: str = "2way") -> list[SraQuestion]:
    """Load one corpus split of the SemEval-2013 release.

    Args:
        root: the folder holding ``training/`` and ``test/`` (``.../semeval2013-task7``).
        corpus: ``beetle`` or ``sciEntsBank``.
        split: ``train``, ``unseen_answers``, ``unseen_questions`` or ``unseen_domains``.
        ways: ``2way`` or ``5way`` (5-way files are used when present).

    Raises:
        FileNotFoundError: naming the missing folder.
    """
    base = Path(root)
    if split == "train":
        folder = base / "training" / ways / corpus
    elif split in TEST_SPLITS:
        folder = base / "test" / ways / corpus / TEST_SPLITS[split]
    else:
        raise ValueError(f"unknown split '{split}'; choose train or {', '.join(TEST_SPLITS)}")
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} does not exist ({corpus} {split} {ways})")
    return [parse_question_file(path) for path in sorted(folder.glob("*.xml"))]


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens (Text::Similarity's default normalization)."""
    return _WORD_RE.findall(text.lower())


def overlap_scores(answer: Sequence[str], other: Sequence[str]) -> tuple[float, float, float, float]:
    """(raw overlap, F1, Lesk, cosine) between two token lists; zeros when either is empty."""
    if not answer or not other:
        return 0.0, 0.0, 0.0, 0.0
    blocks = [
        b.size
        for b in SequenceMatcher(None, list(answer), list(other), autojunk=False).get_matching_blocks()
        if b.size
    ]
    raw = float(sum(blocks))
    precision, recall = raw / len(answer), raw / len(other)
    f1 = 2 * precision * recall / (precision + recall) if raw else 0.0
    lesk = sum(size * size for size in blocks) / (len(answer) * len(other))
    cosine = raw / math.sqrt(len(answer) * len(other))
    return raw, f1, lesk, cosine


def features(answer: str, question: str, references: Sequence[str]) -> list[float]:
    """The 8 baseline features: 4 against the question, then the best of each against the references."""
    answer_tokens = tokens(answer)
    against_question = overlap_scores(answer_tokens, tokens(question))
    per_reference = [overlap_scores(answer_tokens, tokens(reference)) for reference in references] or [
        (0.0,) * 4
    ]
    best = tuple(max(values[i] for values in per_reference) for i in range(4))
    return [*against_question, *best]


def examples(questions: Sequence[SraQuestion]) -> tuple[list[list[float]], list[str], list[str]]:
    """Feature rows, gold labels and answer ids for every student answer of ``questions``."""
    rows: list[list[float]] = []
    labels: list[str] = []
    ids: list[str] = []
    for question in questions:
        references = [reference.text for reference in question.references]
        for answer in question.answers:
            rows.append(features(answer.text, question.text, references))
            labels.append(answer.label)
            ids.append(answer.id)
    return rows, labels, ids


def train_classifier(
    rows: Sequence[Sequence[float]], labels: Sequence[str], seed: int = 0, ccp_alpha: float = 0.001
) -> Any:
    """Fit the decision tree (CART, entropy, min 2 per leaf, light cost-complexity pruning).

    Returns:
        A fitted ``sklearn.tree.DecisionTreeClassifier``.
    """
    from sklearn.tree import DecisionTreeClassifier

    model = DecisionTreeClassifier(
        criterion="entropy", min_samples_leaf=2, ccp_alpha=ccp_alpha, random_state=seed
    )
    model.fit([list(row) for row in rows], list(labels))
    return model


def prf_report(
    gold: Sequence[str], predicted: Sequence[str], labels: Optional[Sequence[str]] = None
) -> dict[str, Any]:
    """Per-class P/R/F1, macro and (size-weighted) micro averages, accuracy and corrective feedback.

    A class never predicted has undefined precision; it is reported as None (with a warning) and left
    out of the averages' precision, as spaCy does for undefined scores.

    Args:
        gold: gold labels.
        predicted: predicted labels.
        labels: class order (default: the classes in ``gold``, sorted, ``correct`` first).

    Returns:
        ``{"per_class": {label: {"p", "r", "f", "support"}}, "macro": {...}, "micro": {...},
        "accuracy", "corrective_feedback": {"p", "r", "f"}, "n"}``.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    classes = list(labels) if labels else sorted(set(gold), key=lambda label: (label != CORRECT, label))
    per_class = {label: _class_prf(gold, predicted, label) for label in classes}
    total = sum(int(values["support"] or 0) for values in per_class.values())
    macro, micro = _averages(per_class)
    needs = [g != CORRECT for g in gold]
    flagged = [p != CORRECT for p in predicted]
    tp = sum(1 for g, p in zip(needs, flagged, strict=False) if g and p)
    corrective = _prf(tp, sum(flagged), sum(needs), "corrective feedback")
    accuracy = sum(1 for g, p in zip(gold, predicted, strict=False) if g == p) / len(gold) if gold else None
    return {
        "n": total,
        "per_class": per_class,
        "macro": macro,
        "micro": micro,
        "accuracy": accuracy,
        "corrective_feedback": corrective,
    }


def _class_prf(gold: Sequence[str], predicted: Sequence[str], label: str) -> dict[str, Optional[float]]:
    """P/R/F1 of one class, with its support (gold items of the class)."""
    tp = sum(1 for g, p in zip(gold, predicted, strict=False) if g == label and p == label)
    n_pred = sum(1 for p in predicted if p == label)
    n_gold = sum(1 for g in gold if g == label)
    return {**_prf(tp, n_pred, n_gold, f"class '{label}'"), "support": n_gold}


def _averages(
    per_class: dict[str, dict[str, Optional[float]]],
) -> tuple[dict[str, Optional[float]], dict[str, Optional[float]]]:
    """Macro and support-weighted micro averages of P, R and F1 over the classes where each is defined."""
    macro: dict[str, Optional[float]] = {}
    micro: dict[str, Optional[float]] = {}
    for key in ("p", "r", "f"):
        defined = [
            (values[key], int(values["support"] or 0))
            for values in per_class.values()
            if values[key] is not None
        ]
        macro[key] = sum(v for v, _ in defined) / len(defined) if defined else None
        weight = sum(w for _, w in defined)
        micro[key] = sum(v * w for v, w in defined) / weight if weight else None
    return macro, micro


def _prf(tp: int, n_pred: int, n_gold: int, label: str) -> dict[str, Optional[float]]:
    precision = tp / n_pred if n_pred else None
    recall = tp / n_gold if n_gold else None
    if precision is None or recall is None:
        logger.warning(
            "%s: precision or recall undefined (no prediction or no gold item); reported as None", label
        )
        f1 = None
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"p": precision, "r": recall, "f": f1}


@dataclass(frozen=True)
class Grade:
    """A screening answer's grade: label, classifier confidence, the closest reference and the features."""

    label: str
    confidence: float
    best_reference: Optional[str]
    features: dict[str, float]


def grade_answer(answer: str, question: str, references: Sequence[str], classifier: Any) -> Grade:
    """Grade a screening answer against reference answers with a trained lexical classifier.

    Args:
        answer: the worker's answer.
        question: the screening question.
        references: acceptable reference answers (at least one).
        classifier: a model from :func:`train_classifier` (e.g. trained on SemEval Beetle + SciEntsBank).

    Returns:
        The :class:`Grade`.

    Raises:
        ValueError: when no reference answer is given.
    """
    if not references:
        raise ValueError(f"question {question[:60]!r}: grading needs at least one reference answer")
    row = features(answer, question, references)
    probabilities = classifier.predict_proba([row])[0]
    best_index = int(probabilities.argmax())
    answer_tokens = tokens(answer)
    best_reference = max(references, key=lambda ref: overlap_scores(answer_tokens, tokens(ref))[1])
    return Grade(
        label=str(classifier.classes_[best_index]),
        confidence=float(probabilities[best_index]),
        best_reference=best_reference,
        features=dict(zip(FEATURE_NAMES, row, strict=False)),
    )
