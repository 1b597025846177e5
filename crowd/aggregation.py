"""Aggregation of repeated judgements: one verdict per item and one skill per worker, through crowd-kit.

Why: SciQ stage 2 can send one question to k validators, and their verdicts disagree. Counting them one
by one lets a spammer who marks everything "fine" weigh as much as a careful worker. crowd-kit (Toloka's
library, the field's standard) estimates each worker's reliability together with each item's label:

* ``majority``: majority vote; confidence is the winning share, skill the worker's balanced agreement
  with the majority verdicts.
* ``dawid_skene``: Dawid & Skene (1979), a confusion matrix per worker fitted by EM; confidence is the
  posterior of the verdict, skill the worker's balanced accuracy under that matrix (the mean over true
  labels of the chance to give that label), so chance level is 1/labels. The default: crowd-kit's
  published tables show it 2.8 to 7.9 points above majority on four of five real datasets, and it
  aggregates 10,000 labels in a few seconds here (benchmarks/aggregation_sciq.py).
* ``mace``: MACE (Hovy et al. 2013), which models each worker as knowing or spamming; skill is the
  probability that the worker answers from knowledge. Slow in crowd-kit (one pandas pass per
  iteration and restart), so it runs with fewer restarts and iterations than crowd-kit's defaults
  (:data:`MACE_RESTARTS`, :data:`MACE_ITERATIONS`).

This module does not import Django: the management command, the release and the benchmarks all call
:func:`aggregate` with plain :class:`Judgement` values.
"""

from __future__ import annotations

import json
import logging
import math
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import pandas as pd
from crowdkit.aggregation import MACE, DawidSkene, MajorityVote
from crowdkit.metrics.data import alpha_krippendorff

# The method names and labels are offered here too, beside the methods that use them.
from crowd.aggregation_terms import ACCEPT as ACCEPT
from crowd.aggregation_terms import DAWID_SKENE as DAWID_SKENE
from crowd.aggregation_terms import DEFAULT_METHOD as DEFAULT_METHOD
from crowd.aggregation_terms import MACE_METHOD as MACE_METHOD
from crowd.aggregation_terms import MAJORITY as MAJORITY
from crowd.aggregation_terms import METHODS as METHODS
from crowd.aggregation_terms import REJECT as REJECT
from crowd.aggregation_terms import validation_label as validation_label

logger = logging.getLogger(__name__)


DS_ITERATIONS = 25
"""Most EM iterations of Dawid-Skene; it stops earlier once the evidence bound per label gains less than
:data:`DS_TOLERANCE`. A crowd of well-separated workers converges in a few iterations; a crowd of
uniformly careless workers creeps on for 50 and more while its verdicts barely move (benchmarks/
aggregation_sciq.py), so the cap keeps 10,000 labels within a few seconds."""
DS_TOLERANCE = 1e-4
MACE_RESTARTS = 2
"""MACE restarts from random starting points. crowd-kit's defaults (10 restarts of 50 iterations) took
33.7 s on the benchmark's 6,000 labels for 85.85% accuracy; 2 restarts of 25 took 4.9 s for 86.0%
(benchmarks/RESULTS.md, "Aggregation")."""
MACE_ITERATIONS = 25


class AggregationError(ValueError):
    """Unusable judgements: an unknown method, a malformed line, the same worker twice on one item."""


@dataclass(frozen=True)
class Judgement:
    """One worker's label for one item."""

    item: str
    worker: str
    label: str


@dataclass(frozen=True)
class Verdict:
    """The aggregated label of one item and how sure the method is of it (0..1)."""

    label: str
    confidence: float
    votes: int


@dataclass(frozen=True)
class WorkerSkill:
    """A worker's estimated skill (0..1; None when the method gives none) over ``n`` judgements."""

    skill: Optional[float]
    n: int
    gold_accuracy: Optional[float] = None
    gold_n: int = 0


@dataclass(frozen=True)
class Aggregation:
    """The result of :func:`aggregate`.

    Attributes:
        method: one of :data:`METHODS`.
        items: item -> verdict.
        workers: worker -> skill.
        labels: the judgements counted.
        seconds: wall time of the fit.
    """

    method: str
    items: Mapping[str, Verdict]
    workers: Mapping[str, WorkerSkill]
    labels: int
    seconds: float = 0.0
    alpha: Optional[float] = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The command's JSON: ``{"method", "items": {ITEM: {"label", "confidence"}}, "workers": {...}}``."""
        return {
            "method": self.method,
            "labels": self.labels,
            "alpha": self.alpha,
            "items": {
                item: {"label": v.label, "confidence": round(v.confidence, 6), "votes": v.votes}
                for item, v in sorted(self.items.items())
            },
            "workers": {
                worker: {
                    "skill": None if s.skill is None else round(s.skill, 6),
                    "n": s.n,
                    **(
                        {
                            "gold_accuracy": None if s.gold_accuracy is None else round(s.gold_accuracy, 6),
                            "gold_n": s.gold_n,
                        }
                        if s.gold_n
                        else {}
                    ),
                }
                for worker, s in sorted(self.workers.items())
            },
        }

    def below(self, threshold: float, min_labels: int = 1) -> list[str]:
        """Workers whose skill is under ``threshold`` after at least ``min_labels`` judgements."""
        return sorted(
            w
            for w, s in self.workers.items()
            if s.skill is not None and s.n >= min_labels and s.skill < threshold
        )


def parse_judgements(lines: Iterable[str], where: str = "input") -> list[Judgement]:
    """Judgements from JSON lines ``{"item": ..., "worker": ..., "label": ...}`` (blank lines skipped).

    Raises:
        AggregationError: naming the line and field of a malformed line, or a worker judging one item
            twice.
    """
    out: list[Judgement] = []
    seen: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AggregationError(f"{where} line {number}: not JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise AggregationError(
                f"{where} line {number}: expected a JSON object, got {line.strip()[:80]!r}"
            )
        values = []
        for name in ("item", "worker", "label"):
            value = record.get(name)
            if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
                raise AggregationError(
                    f"{where} line {number}: field '{name}' must be a non-empty string, got {value!r}"
                )
            values.append(str(value))
        judgement = Judgement(*values)
        key = (judgement.item, judgement.worker)
        if key in seen:
            raise AggregationError(
                f"{where} line {number}: worker {judgement.worker!r} already judged item "
                f"{judgement.item!r} on line {seen[key]}"
            )
        seen[key] = number
        out.append(judgement)
    return out


def _frame(judgements: Sequence[Judgement]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task": [j.item for j in judgements],
            "worker": [j.worker for j in judgements],
            "label": [j.label for j in judgements],
        }
    )


def _encoded(judgements: Sequence[Judgement]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The judgements with items, workers and labels as integer codes, and the names of each code.

    Why: crowd-kit groups by these columns on every EM iteration, and pandas groups integers about
    twice as fast as strings (Dawid-Skene on 10,000 labels: 1.8 s instead of 3.3 s for 20 iterations).
    """
    frame = _frame(judgements)
    data: dict[str, Any] = {}
    names: dict[str, Any] = {}
    for column in ("task", "worker", "label"):
        codes, uniques = pd.factorize(frame[column])
        data[column] = codes
        names[column] = [str(u) for u in uniques]
    return pd.DataFrame(data), names


def _verdicts(probas: pd.DataFrame, votes: Counter[str]) -> dict[str, Verdict]:
    """Item -> verdict from a (task x label) probability table; ties go to the first label by name."""
    probas = probas.reindex(sorted(probas.columns), axis="columns").fillna(0.0)
    labels = probas.idxmax(axis="columns")
    top = probas.max(axis="columns")
    return {
        str(task): Verdict(str(labels[task]), float(top[task]), votes[str(task)]) for task in probas.index
    }


def _ds_skills(model: DawidSkene) -> dict[int, float]:
    """Balanced accuracy from each worker's fitted confusion matrix: the mean over true labels of
    P(worker says label | label). Chance is 1/labels, and a worker who always gives the same label
    scores exactly that whatever the item mix (plain accuracy would rate an "everything is fine"
    spammer 0.7 on a collection where 70% of the questions are fine)."""
    errors = model.errors_
    skills: dict[int, float] = {}
    for worker in errors.index.get_level_values(0).unique():
        matrix = errors.loc[worker]
        diagonal = [
            float(matrix.at[label, label]) if label in matrix.index else 0.0 for label in matrix.columns
        ]
        skills[int(worker)] = sum(diagonal) / len(diagonal)
    return skills


def _agreement_skills(data: pd.DataFrame, verdicts: pd.Series) -> dict[int, float]:
    """Balanced agreement with the majority verdicts: per worker, the mean over verdict labels of the
    share of that label's items the worker labelled the same (the majority-vote analogue of
    :func:`_ds_skills`)."""
    frame = data.assign(truth=data["task"].map(verdicts))
    frame["hit"] = frame["label"] == frame["truth"]
    labels = sorted(frame["truth"].unique())
    per = frame.groupby(["worker", "truth"])["hit"].mean().unstack("truth")
    per = per.reindex(columns=labels).fillna(0.0)
    return {int(w): float(row.mean()) for w, row in per.iterrows()}


def aggregate(
    judgements: Sequence[Judgement],
    method: str = DEFAULT_METHOD,
    *,
    seed: int = 0,
    with_alpha: bool = True,
    gold: Optional[Mapping[str, str]] = None,
) -> Aggregation:
    """Aggregate repeated judgements with crowd-kit.

    Args:
        judgements: one label per (item, worker); items judged by one worker only are kept (their
            verdict is that worker's label, weighed by the method).
        method: ``majority``, ``dawid_skene`` or ``mace``.
        seed: MACE's random restarts.
        with_alpha: also compute Krippendorff's alpha (agreement) over the judgements.
        gold: item -> known label (gold items, known-bad ones included): each worker's accuracy on them
            is reported (``gold_accuracy``, ``gold_n``), and Dawid-Skene fixes those items to their
            known label while it fits (crowd-kit's ``true_labels``), which anchors the workers' matrices.

    Returns:
        The verdict per item and the skill per worker.

    Raises:
        AggregationError: an unknown method or the same worker twice on one item.
    """
    if method not in METHODS:
        raise AggregationError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    pairs = Counter((j.item, j.worker) for j in judgements)
    twice = [key for key, n in pairs.items() if n > 1]
    if twice:
        item, worker = twice[0]
        raise AggregationError(f"worker {worker!r} judged item {item!r} {pairs[twice[0]]} times")
    per_worker = Counter(j.worker for j in judgements)
    votes = Counter(j.item for j in judgements)
    if not judgements:
        return Aggregation(method, {}, {}, 0)
    data, names = _encoded(judgements)
    started = time.perf_counter()
    with warnings.catch_warnings():
        # pandas deprecations (Pandas4Warning, FutureWarning) raised inside crowd-kit's own code
        warnings.filterwarnings("ignore", module=r"crowdkit\.")
        if method == MAJORITY:
            model = MajorityVote()
            probas = model.fit_predict_proba(data)
            skills = _agreement_skills(data, probas.idxmax(axis="columns"))
        elif method == DAWID_SKENE:
            model = DawidSkene(n_iter=DS_ITERATIONS, tol=DS_TOLERANCE)
            probas = model.fit_predict_proba(data, true_labels=_gold_codes(gold, names))
            skills = _ds_skills(model)
        else:
            model = MACE(n_restarts=MACE_RESTARTS, n_iter=MACE_ITERATIONS, random_state=seed)
            probas = model.fit_predict_proba(data)
            # MACE numbers workers by first appearance (pandas.factorize), as _encoded does.
            order = pd.factorize(data["worker"])[1]
            skills = {int(w): float(model.spamming_[i, 1]) for i, w in enumerate(order)}
    probas = probas.rename(index=lambda t: names["task"][t], columns=lambda lab: names["label"][lab])
    skills = {names["worker"][w]: value for w, value in skills.items()}
    seconds = time.perf_counter() - started
    alpha = krippendorff_alpha(judgements) if with_alpha else None
    gold_scores = gold_accuracy(judgements, gold or {})
    result = Aggregation(
        method=method,
        items=_verdicts(probas, votes),
        workers={
            w: WorkerSkill(skills.get(w), n, *gold_scores.get(w, (None, 0))) for w, n in per_worker.items()
        },
        labels=len(judgements),
        seconds=seconds,
        alpha=alpha,
    )
    logger.info(
        "aggregate: %d labels, %d items, %d workers, %s in %.2f s",
        len(judgements),
        len(result.items),
        len(result.workers),
        method,
        seconds,
    )
    return result


def _gold_codes(gold: Optional[Mapping[str, str]], names: Mapping[str, Any]) -> Optional[pd.Series]:
    """Gold labels as crowd-kit's ``true_labels`` in the integer codes of :func:`_encoded` (items and
    labels the judgements never mention are left out); None without gold."""
    if not gold:
        return None
    task_code = {name: i for i, name in enumerate(names["task"])}
    label_code = {name: i for i, name in enumerate(names["label"])}
    pairs = {task_code[i]: label_code[lab] for i, lab in gold.items() if i in task_code and lab in label_code}
    return pd.Series(pairs, dtype="int64") if pairs else None


def gold_accuracy(
    judgements: Sequence[Judgement], gold: Mapping[str, str]
) -> dict[str, tuple[Optional[float], int]]:
    """Worker -> (share of their judgements of gold items that match the known label, how many)."""
    right: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for j in judgements:
        if j.item in gold:
            seen[j.worker] += 1
            right[j.worker] += j.label == gold[j.item]
    return {w: (right[w] / n, n) for w, n in seen.items()}


def parse_gold(lines: Iterable[str], where: str = "gold") -> dict[str, str]:
    """Gold labels from JSON lines ``{"item": ..., "label": ...}``.

    Raises:
        AggregationError: naming the line of a malformed line or of an item given twice.
    """
    gold: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AggregationError(f"{where} line {number}: not JSON ({exc.msg})") from exc
        if not isinstance(record, dict):
            raise AggregationError(f"{where} line {number}: expected a JSON object")
        item, label = record.get("item"), record.get("label")
        for name, value in (("item", item), ("label", label)):
            if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
                raise AggregationError(f"{where} line {number}: field '{name}' must be a non-empty string")
        if str(item) in gold:
            raise AggregationError(f"{where} line {number}: item {item!r} is given twice")
        gold[str(item)] = str(label)
    return gold


def krippendorff_alpha(judgements: Sequence[Judgement]) -> Optional[float]:
    """Krippendorff's alpha (nominal) over the items judged at least twice; None when undefined
    (no such item, or every label the same, where agreement by chance is total)."""
    votes = Counter(j.item for j in judgements)
    repeated = [j for j in judgements if votes[j.item] > 1]
    if not repeated or len({j.label for j in repeated}) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = float(alpha_krippendorff(_frame(repeated)))
    return None if math.isnan(value) else value
