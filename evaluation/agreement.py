"""Agreement between an expert's oracle answers and the crowd's answers (SyllabusQA 2.3, the "Human" row).

SyllabusQA measures inter-annotator agreement on factual overlap rather than with classic agreement
coefficients, because annotators write answers in their own words: an expert answers a random sample of
test questions, and the expert's answers are scored against the crowd's with Fact-QA precision / recall
(an LLM judge), ROUGE-L F1 and BERTScore F1. The expert answers play the part of predictions and the crowd
answers the part of references, so the figures are directly comparable with the baselines' rows of the
leaderboard (:func:`evaluation.metrics.score`, stratified by the crowd's question type and answer source).

The expert also chose a question type before answering (as the paper's expert did); type agreement is
reported as accuracy and Cohen's kappa (scikit-learn) with the crowd's type as the reference. Undefined
figures are ``None`` with an :class:`~evaluation.metrics.UndefinedMetricWarning`, never 0.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from evaluation.metrics import UndefinedMetricWarning, score
from evaluation.schema import QUESTION_TYPES, Prediction, ProgressCallback, QAItem, normalize_question_type

logger = logging.getLogger(__name__)

#: Per-item score keys :func:`evaluation.metrics.score_items` can produce, in leaderboard order.
SCORE_KEYS: tuple[str, ...] = ("rouge_l_f1", "bertscore_f1", "fact_qa_p", "fact_qa_r", "fact_qa_f")


@dataclass(frozen=True)
class AgreementItem:
    """One crowd QA pair with the expert's answer to the same question.

    Attributes:
        id: the release item id of the crowd pair.
        question: the question (shown to both).
        crowd_answer: the crowd worker's answer (the reference).
        crowd_type: the crowd worker's question type.
        expert_answer: the expert's answer (scored as a prediction).
        expert_type: the question type the expert chose before answering.
    """

    id: str
    question: str
    crowd_answer: str
    crowd_type: str
    expert_answer: str
    expert_type: str


@dataclass(frozen=True)
class Agreement:
    """Agreement figures, shaped like a :class:`evaluation.models.BenchmarkRun`'s fields.

    Attributes:
        n: number of items.
        metrics: overall figures (``rouge_l_f1``, ``bertscore_f1``, ``fact_qa_p/r/f``,
            ``question_type_accuracy``, ``question_type_kappa``, ``n``); None when undefined.
        stratified: ``{"question_type": {type: {metric: value, "n": k}}, "answer_source": {...}}``
            (strata are the crowd's types).
        type_confusion: crowd type -> expert type -> count.
        items: item id -> per-item scores plus both types and answers.
    """

    n: int
    metrics: dict[str, Optional[float]]
    stratified: dict[str, dict[str, dict[str, Optional[float]]]]
    type_confusion: dict[str, dict[str, int]]
    items: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the run's results file)."""
        return {
            "n": self.n,
            "metrics": dict(self.metrics),
            "stratified": {k: {s: dict(v) for s, v in g.items()} for k, g in self.stratified.items()},
            "type_confusion": {k: dict(v) for k, v in self.type_confusion.items()},
            "items": {k: dict(v) for k, v in self.items.items()},
        }


def _undefined(label: str) -> None:
    warnings.warn(f"{label}: undefined, reported as None", UndefinedMetricWarning, stacklevel=3)


def type_agreement(crowd_types: Sequence[str], expert_types: Sequence[str]) -> dict[str, Any]:
    """Question-type agreement: accuracy, Cohen's kappa and the confusion counts.

    Why kappa: with seven roughly balanced types, raw accuracy overstates agreement by about 1/7; kappa
    corrects for chance (scikit-learn's ``cohen_kappa_score``).

    Args:
        crowd_types: the crowd's question types (the reference).
        expert_types: the expert's, aligned with ``crowd_types``.

    Returns:
        ``{"accuracy", "kappa", "confusion"}``; accuracy is None for no items, kappa None when undefined
        (no items, or one single label on both sides), each with an UndefinedMetricWarning.

    Raises:
        ValueError: when the sequences differ in length.
    """
    from sklearn.metrics import cohen_kappa_score

    if len(crowd_types) != len(expert_types):
        raise ValueError(f"{len(crowd_types)} crowd types but {len(expert_types)} expert types")
    crowd = [normalize_question_type(t) or "" for t in crowd_types]
    expert = [normalize_question_type(t) or "" for t in expert_types]
    confusion: dict[str, dict[str, int]] = {}
    for c, e in zip(crowd, expert, strict=True):
        row = confusion.setdefault(c, {})
        row[e] = row.get(e, 0) + 1
    if not crowd:
        _undefined("question type agreement of 0 items")
        return {"accuracy": None, "kappa": None, "confusion": confusion}
    accuracy = sum(c == e for c, e in zip(crowd, expert, strict=True)) / len(crowd)
    labels = [t for t in QUESTION_TYPES if t in crowd or t in expert] + sorted(
        {t for t in crowd + expert if t not in QUESTION_TYPES}
    )
    kappa: Optional[float] = None
    if len(labels) > 1:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # sklearn warns on undefined kappa; we warn with our own class
            value = float(cohen_kappa_score(crowd, expert, labels=labels, replace_undefined_by=math.nan))
        kappa = None if math.isnan(value) else value
    if kappa is None:
        _undefined("Cohen's kappa of question types (a single type on both sides)")
    return {"accuracy": accuracy, "kappa": kappa, "confusion": confusion}


def _stratified(scored: dict[str, Any], keys: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """Turn :func:`evaluation.metrics.aggregate`'s flat ``<metric>_per_type`` keys into nested strata."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for stratum, suffix in (("question_type", "type"), ("answer_source", "source")):
        counts: dict[str, int] = scored.get(f"n_per_{suffix}", {})
        groups: dict[str, dict[str, Any]] = {name: {"n": n} for name, n in counts.items()}
        for key in keys:
            for name, value in scored.get(f"{key}_per_{suffix}", {}).items():
                groups.setdefault(name, {})[key] = value
        out[stratum] = groups
    return out


def agreement(
    items: Sequence[AgreementItem],
    metrics: Sequence[str] = ("rouge_l", "bertscore"),
    *,
    fact_qa_scorer: Optional[Callable[..., dict[str, list[Optional[float]]]]] = None,
    bertscore_model: Optional[str] = None,
    progress: Optional[ProgressCallback] = None,
) -> Agreement:
    """Score expert answers against crowd answers and the expert's types against the crowd's.

    Args:
        items: one item per crowd pair the expert answered (ids unique).
        metrics: names from :data:`evaluation.metrics.METRIC_NAMES`; ``fact_qa`` is added automatically
            when ``fact_qa_scorer`` is given.
        fact_qa_scorer: the judge, e.g. ``functools.partial(evaluation.factqa.fact_qa_item_scores,
            backend=..., cache=...)``; precision counts the expert answer's claims the crowd answer
            supports, recall the reverse.
        bertscore_model: a local model directory for BERTScore (default: the packaged MiniLM).
        progress: called with (metrics done, metrics requested).

    Returns:
        The :class:`Agreement`.

    Raises:
        ValueError: for no items, a duplicated id, or an unknown metric name.
    """
    if not items:
        raise ValueError("no expert answers to compare: the expert batch has no submitted work")
    names = list(metrics)
    if fact_qa_scorer is not None and "fact_qa" not in names:
        names.append("fact_qa")
    references = [
        QAItem(id=i.id, question=i.question, answer=i.crowd_answer, question_type=i.crowd_type) for i in items
    ]
    predictions = [Prediction(id=i.id, answer=i.expert_answer, predicted_type=i.expert_type) for i in items]
    scored = score(
        predictions,
        references,
        names,
        fact_qa_scorer=fact_qa_scorer,
        bertscore_model=bertscore_model,
        progress=progress,
    )
    keys = [k for k in SCORE_KEYS if k in scored]
    types = type_agreement([i.crowd_type for i in items], [i.expert_type for i in items])
    overall: dict[str, Optional[float]] = {k: scored[k] for k in keys}
    overall["question_type_accuracy"] = types["accuracy"]
    overall["question_type_kappa"] = types["kappa"]
    overall["n"] = len(items)
    per_item: dict[str, dict[str, Any]] = {}
    for item in items:
        entry: dict[str, Any] = dict(scored["items"][item.id])
        entry.update(
            question=item.question,
            crowd_answer=item.crowd_answer,
            expert_answer=item.expert_answer,
            crowd_type=item.crowd_type,
            expert_type=item.expert_type,
            type_agrees=normalize_question_type(item.crowd_type) == normalize_question_type(item.expert_type),
        )
        per_item[item.id] = entry
    logger.info("agreement over %d expert answers: %s", len(items), overall)
    return Agreement(
        n=len(items),
        metrics=overall,
        stratified=_stratified(scored, keys),
        type_confusion=types["confusion"],
        items=per_item,
    )
