"""The "human" row of a release's leaderboard: agreement between expert and crowd answers.

SyllabusQA 2.3 ("Agreement among Annotators") reports human performance as the agreement between an
expert's oracle answers and the crowd's answers on a random sample of test questions. The expert's work
comes from ``expert_answer`` batches (``create_expert_batch``); this module loads the submitted or
approved :class:`annotation.models.ExpertAnswer` rows, scores them with the pure
:func:`evaluation.agreement.agreement` and stores a :class:`evaluation.models.BenchmarkRun` with
``system="human"`` (per-item results in a JSON file beside the other runs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from annotation.hits import handler_for, kinds_where
from annotation.models import Assignment, Batch, ExpertAnswer
from config.storage import share_file
from evaluation.agreement import AgreementItem, agreement
from evaluation.factqa import JsonFileJudgeCache, JudgeCache, fact_qa_item_scores
from evaluation.llm import LLMBackend
from evaluation.metrics import METRIC_NAMES
from evaluation.models import BenchmarkRun
from exports.dataset import item_id
from exports.models import Release

logger = logging.getLogger(__name__)

HUMAN = "human"
DONE_STATUSES = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


class HumanAgreementError(ValueError):
    """Agreement cannot be computed as asked (no expert batch for the release, no submitted answer...)."""


def results_dir() -> Path:
    """Where run result files and judge caches go: ``$CROWDQA_VAR_DIR/benchmarks``, as for every run."""
    return Path(settings.VAR_DIR) / "benchmarks"


def default_judge_cache(judge: LLMBackend) -> JsonFileJudgeCache:
    """The judge's reply cache, one JSON file per judge name (the file ``run_benchmark`` uses too)."""
    digest = hashlib.sha256(judge.name.encode("utf-8")).hexdigest()[:16]
    return JsonFileJudgeCache(results_dir() / "judge-cache" / f"{digest}.json")


def expert_batches_for(release: Release, batch: Optional[Batch] = None) -> list[Batch]:
    """The expert batches of a release: ``batch`` itself (checked), or every one made for it.

    Raises:
        HumanAgreementError: ``batch`` is not an expert batch of ``release``, or there is none.
    """
    if batch is not None:
        if not handler_for(batch.kind).expert_only:
            raise HumanAgreementError(f"Batch({batch.pk}) is a {batch.kind} batch, not expert_answer")
        if batch.release_id != release.pk:
            raise HumanAgreementError(
                f"Batch({batch.pk}) was made for Release({batch.release_id}), not {release}"
            )
        return [batch]
    batches = list(
        Batch.objects.filter(kind__in=kinds_where(lambda h: h.expert_only), release=release).order_by("pk")
    )
    if not batches:
        raise HumanAgreementError(f"no expert_answer batch for release {release} (run create_expert_batch)")
    return batches


def expert_items(batches: Sequence[Batch]) -> tuple[list[AgreementItem], list[str], str]:
    """Agreement items from the submitted or approved expert answers of ``batches``.

    Returns:
        (items, expert pseudonyms, split). An item's id is the crowd pair's release id; a pair answered
        twice (two experts) keeps both, the second as ``<id>#<assignment id>``.

    Raises:
        HumanAgreementError: the batches sample different splits, or nothing was submitted yet.
    """
    splits = {b.options.get("split", "test") for b in batches}
    if len(splits) != 1:
        raise HumanAgreementError(f"the expert batches sample different splits: {sorted(splits)}")
    answers = (
        ExpertAnswer.objects.filter(assignment__hit__batch__in=batches, assignment__status__in=DONE_STATUSES)
        .select_related("qa_pair", "assignment__worker")
        .order_by("pk")
    )
    items: list[AgreementItem] = []
    experts: set[str] = set()
    seen: set[str] = set()
    for row in answers:
        pair = row.qa_pair
        key = item_id(pair)
        if key in seen:
            key = f"{key}#{row.assignment_id}"
        seen.add(key)
        experts.add(row.assignment.worker.pseudonym)
        items.append(
            AgreementItem(
                id=key,
                question=pair.question,
                crowd_answer=pair.answer,
                crowd_type=pair.question_type,
                expert_answer=row.answer,
                expert_type=row.question_type,
            )
        )
    if not items:
        ids = ", ".join(str(b.pk) for b in batches)
        raise HumanAgreementError(f"no submitted or approved expert answer in Batch({ids}) yet")
    return items, sorted(experts), splits.pop()


def compute_human_agreement(
    release: Release,
    batch: Optional[Batch] = None,
    judge: Optional[LLMBackend] = None,
    *,
    metrics: Sequence[str] = ("rouge_l", "bertscore"),
    judge_cache: Optional[JudgeCache] = None,
    bertscore_model: Optional[str] = None,
) -> BenchmarkRun:
    """Score the expert's answers against the crowd's and store the release's "human" run.

    Args:
        release: the release the expert batch sampled.
        batch: one expert batch; None uses every expert batch of the release.
        judge: a Fact-QA judge backend; None leaves Fact-QA out.
        metrics: text metrics (``rouge_l``, ``bertscore``); ``fact_qa`` is added when a judge is given.
        judge_cache: judge reply cache; default :func:`default_judge_cache`.
        bertscore_model: a local model directory for BERTScore.

    Returns:
        The stored run (status done); a failure is stored as status failed and re-raised.

    Raises:
        HumanAgreementError: an unknown metric; see :func:`expert_batches_for` and :func:`expert_items`.
    """
    unknown = [m for m in metrics if m not in METRIC_NAMES]
    if unknown:
        raise HumanAgreementError(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRIC_NAMES)}")
    batches = expert_batches_for(release, batch)
    items, experts, split = expert_items(batches)
    names = list(metrics) + (["fact_qa"] if judge is not None and "fact_qa" not in metrics else [])
    scorer = None
    if judge is not None:
        cache = judge_cache or default_judge_cache(judge)
        scorer = functools.partial(fact_qa_item_scores, backend=judge, cache=cache, on_error="none")
    run = BenchmarkRun.objects.create(
        release=release,
        split=split,
        system=HUMAN,
        model_name="expert:" + ",".join(experts),
        params={
            "batches": [b.pk for b in batches],
            "seeds": [b.options.get("seed") for b in batches],
            "sampled": sum(len(b.options.get("items", ())) for b in batches),
            "judge": getattr(judge, "name", None),
            "predictions": "expert answers",
            "references": "crowd answers",
        },
        metrics_requested=names,
        status=BenchmarkRun.Status.RUNNING,
        n_items=len(items),
        started=timezone.now(),
    )
    began = time.perf_counter()
    try:
        result = agreement(items, names, fact_qa_scorer=scorer, bertscore_model=bertscore_model)
    except Exception as exc:
        run.status = BenchmarkRun.Status.FAILED
        run.error = f"{type(exc).__name__}: {exc}"
        run.finished = timezone.now()
        run.save(update_fields=["status", "error", "finished"])
        logger.exception("BenchmarkRun(%s) human agreement failed", run.pk)
        raise
    seconds = time.perf_counter() - began
    path = results_dir() / f"run-{run.pk}-human.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {"run": run.pk, "release": str(release), "split": split, **result.to_dict()}
    path.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    run.metrics = result.metrics
    run.stratified = result.stratified
    run.timings = {"agreement": round(seconds, 3)}
    run.results_path = share_file(path, f"benchmarks/{path.name}")
    run.status = BenchmarkRun.Status.DONE
    run.finished = timezone.now()
    run.save(update_fields=["metrics", "stratified", "timings", "results_path", "status", "finished"])
    logger.info("BenchmarkRun(%s) human on %s: %d items, %s", run.pk, release, len(items), result.metrics)
    return run


def agreement_for(name: str) -> tuple[dict[str, float], Optional[str]]:
    """Agreement figures for the card: the latest finished expert ("human") run on a release of ``name``.

    Why: SyllabusQA reports crowd/expert agreement (section 2.3); the platform stores it as a
    ``BenchmarkRun(system="human")`` on an earlier release of the same dataset, so a new release's card
    can quote it with where it came from.

    Returns:
        (metric -> value for the numeric figures, a note naming the release, split and item count), or
        ``({}, None)`` when no such run exists.
    """
    run = (
        BenchmarkRun.objects.filter(release__name=name, system="human", status=BenchmarkRun.Status.DONE)
        .select_related("release")
        .order_by(F("finished").desc(nulls_last=True), "-pk")
        .first()
    )
    if run is None:
        return {}, None
    figures = {
        k: float(v)
        for k, v in (run.metrics or {}).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    if not figures:
        return {}, None
    note = (
        f"Agreement of expert answers with the crowd's on {run.n_items:,} {run.split} items of release "
        f"{run.release.name} {run.release.version} (benchmark run {run.pk})."
    )
    return figures, note
