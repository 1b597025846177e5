"""Benchmark runs executed: load the items, answer, score, write the per-item JSON, store the figures.

``execute_run`` is what the ``gpu_run_benchmark`` task and ``run_benchmark --sync`` call for a run that
:func:`evaluation.services.runs.prepare_run` created: it loads the items, fine-tunes first when an SFT
run has no adapter, answers with :func:`evaluation.baselines.run_system`, scores with
:mod:`evaluation.metrics` (plus the Fact-QA, LFQA and entailment judges when asked), writes the per-item
JSON file and stores the figures on the row. A done run is never recomputed, so a redelivered task
(acks_late) is harmless; an exception marks the run failed with its message and is re-raised.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any, Optional

from django.conf import settings
from django.utils import timezone

from config.atomic import atomic_write
from config.storage import share_file
from evaluation import metrics as metrics_module
from evaluation.baselines import SystemOptions, run_system
from evaluation.entailment import EntailmentJudge, entailment_item_scores
from evaluation.factqa import JsonFileJudgeCache, fact_qa_item_scores
from evaluation.llm import SMOLLM2_GGUF, HFCausalLMBackend, LLMBackend, OpenAIChatBackend
from evaluation.models import BenchmarkRun
from evaluation.schema import (
    OPENAI_MODEL,
    Prediction,
    ProgressCallback,
    QAItem,
    answer_source,
)
from evaluation.services.items import (
    DEFAULT_SYLLABUS_DECODING,
    BenchmarkInputError,
    load_split_items,
)
from evaluation.services.runs import MCQ_KIND, empty_split_message
from exports.release_store import release_root

logger = logging.getLogger(__name__)

LFQA_KEYS: tuple[str, ...] = ("coherence", "relevance", "factual_consistency", "accuracy")
PROGRESS_SAVE_INTERVAL = 1.0  # seconds between progress writes to the run row

ProgressNotifier = Callable[[dict[str, Any]], None]


def benchmarks_dir() -> Path:
    """Folder of run result files, adapters and judge caches (``<CROWDQA_VAR_DIR>/benchmarks``)."""
    return Path(settings.VAR_DIR) / "benchmarks"


class ProgressRecorder:
    """Keeps ``run.progress`` current (at most one write per second) and forwards it to a notifier."""

    def __init__(self, run: BenchmarkRun, notify: Optional[ProgressNotifier] = None) -> None:
        self.run = run
        self.notify = notify
        self._last_save = 0.0

    def stage(self, name: str) -> ProgressCallback:
        """Return a ``progress(done, total)`` callback for one stage."""
        return partial(self.report, name)

    def report(self, stage: str, done: int, total: int) -> None:
        """Record progress; writes when a stage ends or a second has passed since the last write."""
        self.run.progress = {"stage": stage, "done": done, "total": total}
        now = time.monotonic()
        if done >= total or now - self._last_save >= PROGRESS_SAVE_INTERVAL:
            self._last_save = now
            self.run.save(update_fields=["progress"])
        if self.notify is not None:
            self.notify({"run": self.run.pk, **self.run.progress})


def _generation_backend(run: BenchmarkRun, adapter_dir: Optional[str]) -> Optional[LLMBackend]:
    if run.system == "search":
        return None
    model = run.params.get("model")
    if model == OPENAI_MODEL:
        return OpenAIChatBackend.from_env()
    if run.system == "sft" and adapter_dir:
        from evaluation.sft import SFT_JSON, sft_backend

        if (Path(adapter_dir) / SFT_JSON).is_file():  # written by finetune_lora: it names its base model
            return sft_backend(Path(adapter_dir))
    return HFCausalLMBackend(
        model_dir=model or None, adapter_dir=adapter_dir if run.system == "sft" else None
    )


def _judge_backend(run: BenchmarkRun, generator: Optional[LLMBackend]) -> Optional[LLMBackend]:
    judge = run.params.get("judge", "none")
    if judge == "openai":
        return OpenAIChatBackend.from_env()
    if judge == "local":
        # The default SmolLM2 without an adapter: share the generator's loaded weights when it is that.
        if isinstance(generator, HFCausalLMBackend) and generator.name == f"hf:{SMOLLM2_GGUF}":
            return generator
        return HFCausalLMBackend()
    return None


def _judge_cache(backend: LLMBackend) -> JsonFileJudgeCache:
    digest = hashlib.sha256(backend.name.encode("utf-8")).hexdigest()[:16]
    return JsonFileJudgeCache(benchmarks_dir() / "judge-cache" / f"{digest}.json")


def _finite(value: float) -> Optional[float]:
    """A float for a JSON column: NaN/inf become None (PostgreSQL's jsonb rejects NaN)."""
    return value if math.isfinite(value) else None


def _decoding(run: BenchmarkRun) -> str:
    """The syllabus decoding of a run (runs stored before the option existed read texts as imported)."""
    return run.params.get("syllabus_decoding") or DEFAULT_SYLLABUS_DECODING


def _adapter_for(run: BenchmarkRun, recorder: ProgressRecorder, timings: dict[str, float]) -> Optional[str]:
    """The LoRA adapter of an SFT run: the one given, one trained by an earlier attempt, or a new one."""
    if run.system != "sft":
        return None
    if run.params.get("adapter"):
        return run.params["adapter"]
    previous = run.params.get("sft_result") or {}
    if previous.get("adapter_dir") and Path(previous["adapter_dir"]).is_dir():
        timings["finetune"] = previous.get("seconds", 0.0)
        return previous["adapter_dir"]
    from evaluation.sft import SftConfig, finetune_lora  # another module; imported only when needed

    config = SftConfig(**(run.params.get("sft") or {}))
    train_items = load_split_items(release_root(run.release), "train", decoding=_decoding(run))
    out_dir = benchmarks_dir() / "adapters" / f"run-{run.pk}"
    result = finetune_lora(train_items, out_dir, config, progress=recorder.stage("finetune"))
    run.params = {
        **run.params,
        "sft_config": asdict(config),
        "sft_result": {
            "adapter_dir": str(result.adapter_dir),
            "steps": result.steps,
            "train_loss": _finite(result.train_loss),
            "seconds": result.seconds,
            "base_model": result.base_model,
            "n_train": result.n_train,
            "first_loss": _finite(result.first_loss),
            "last_loss": _finite(result.last_loss),
        },
    }
    run.save(update_fields=["params"])
    timings["finetune"] = result.seconds
    return str(result.adapter_dir)


def _lfqa_scores(
    items: Sequence[QAItem],
    predictions: Sequence[Prediction],
    backend: LLMBackend,
    recorder: ProgressRecorder,
) -> dict[str, list[Optional[float]]]:
    from evaluation.lfqa import judge_item_scores  # another module; imported only when asked for

    rows = judge_item_scores(
        items, predictions, backend, cache=_judge_cache(backend), progress=recorder.stage("lfqa")
    )
    return {f"lfqa_{key}": [row.get(key) for row in rows] for key in LFQA_KEYS}


def _entailment_scores(
    items: Sequence[QAItem],
    predictions: Sequence[Prediction],
    backend: LLMBackend,
    recorder: ProgressRecorder,
) -> dict[str, list[Optional[float]]]:
    """Each predicted answer against its reference with the paper's entailment method on the judge."""
    aligned = metrics_module.align(predictions, items)
    return entailment_item_scores(
        [item.question for item in items],
        [prediction.answer for prediction in aligned],
        [item.answer for item in items],
        judge=EntailmentJudge.llm(backend, _judge_cache(backend)),
        progress=recorder.stage("entailment"),
    )


def split_aggregate(aggregated: dict[str, Any], metric_keys: Sequence[str]) -> tuple[dict, dict]:
    """Split :func:`evaluation.metrics.aggregate`'s flat dict into (overall, stratified) for the row.

    Returns:
        ``({"n": .., metric: ..}, {"question_type": {type: {"n": .., metric: ..}}, "answer_source": ...})``.
    """
    overall = {"n": aggregated["n"], **{key: aggregated.get(key) for key in metric_keys}}
    stratified: dict[str, dict[str, dict[str, Any]]] = {}
    for label, suffix in (("question_type", "type"), ("answer_source", "source")):
        groups: dict[str, dict[str, Any]] = {
            group: {"n": n} for group, n in aggregated.get(f"n_per_{suffix}", {}).items()
        }
        for key in metric_keys:
            for group, value in aggregated.get(f"{key}_per_{suffix}", {}).items():
                groups.setdefault(group, {})[key] = value
        stratified[label] = groups
    return overall, stratified


def _write_json_atomic(path: Path, data: Any) -> None:
    with atomic_write(path) as handle:
        json.dump(data, handle, ensure_ascii=False, indent=1, default=str)


def _write_results(run: BenchmarkRun, document: dict[str, Any]) -> str:
    """Write a run's per-item results to ``<benchmarks_dir>/<run id>.json``; returns where the row keeps
    it: that path, or with a shared storage the URL of its copy there (any host's pages open it)."""
    path = benchmarks_dir() / f"{run.pk}.json"
    _write_json_atomic(path, document)
    return share_file(path, f"benchmarks/{path.name}")


def run_header(run: BenchmarkRun) -> dict[str, Any]:
    """What every results JSON starts with: the run, its release and split, system, model and figures."""
    return {
        "run": run.pk,
        "release": {"name": run.release.name, "version": run.release.version, "path": run.release.path},
        "split": run.split,
        "system": run.system,
        "model": run.model_name,
        "params": run.params,
        "metrics": run.metrics,
        "timings": run.timings,
    }


def _results_document(
    run: BenchmarkRun,
    items: Sequence[QAItem],
    predictions: Sequence[Prediction],
    item_scores: dict[str, list[Optional[float]]],
) -> dict[str, Any]:
    by_id = {p.id: p for p in predictions}
    return {
        **run_header(run),
        "stratified": run.stratified,
        "items": [
            {
                "id": item.id,
                "syllabus_name": item.document_name,
                "question_type": item.question_type,
                "answer_source": answer_source(item.question_type),
                "question": item.question,
                "reference": item.answer,
                "prediction": by_id[item.id].to_dict(),
                "scores": {key: values[index] for key, values in item_scores.items()},
            }
            for index, item in enumerate(items)
        ],
    }


def execute_run(run_id: int, notify: Optional[ProgressNotifier] = None) -> BenchmarkRun:
    """Run a benchmark and store its figures; a done run is returned as it is (safe to call twice).

    Args:
        run_id: the :class:`BenchmarkRun` to execute.
        notify: called with ``{"run", "stage", "done", "total"}`` on progress (the task's update_state).

    Returns:
        The run, done.

    Raises:
        Exception: whatever failed, after the run was marked failed with the message.
    """
    run = BenchmarkRun.objects.select_related("release").get(pk=run_id)
    if run.status == BenchmarkRun.Status.DONE:
        logger.info("BenchmarkRun(%s) is done already; not recomputed", run.pk)
        return run
    run.status, run.started, run.finished, run.error = BenchmarkRun.Status.RUNNING, timezone.now(), None, ""
    run.save(update_fields=["status", "started", "finished", "error"])
    recorder = ProgressRecorder(run, notify)
    timings: dict[str, float] = {}
    begin = time.perf_counter()
    stage = "load"
    try:
        if run.release.kind == MCQ_KIND:
            from evaluation.services.mcq_runs import run_mcq  # it imports this module

            stage = "mcq"
            run_mcq(run, recorder, timings, write_results=_write_results)
            timings["total"] = time.perf_counter() - begin
            run.timings = {key: round(value, 3) for key, value in timings.items()}
            run.status, run.finished = BenchmarkRun.Status.DONE, timezone.now()
            run.save()
            logger.info("BenchmarkRun(%s) done: %s", run.pk, run.metrics)
            _announce(run)
            return run
        metrics = tuple(run.metrics_requested)
        clock = time.perf_counter()
        items = load_split_items(
            release_root(run.release), run.split, run.params.get("limit"), _decoding(run)
        )
        if not items:
            raise BenchmarkInputError(empty_split_message(run.release, run.split))
        timings["load"] = time.perf_counter() - clock
        stage = "finetune"
        adapter_dir = _adapter_for(run, recorder, timings)
        stage = "generate"
        generator = _generation_backend(run, adapter_dir)
        options = SystemOptions(
            backend=generator,
            adapter_dir=adapter_dir,
            max_new_tokens=int(run.params.get("max_new_tokens", SystemOptions.max_new_tokens)),
        )
        clock = time.perf_counter()
        predictions = run_system(run.system, items, options, progress=recorder.stage("generate"))
        timings["generate"] = time.perf_counter() - clock
        stage = "score"
        judge = _judge_backend(run, generator)
        scorer = None
        if "fact_qa" in metrics:
            assert judge is not None  # prepare_run refuses judged metrics without a judge
            scorer = partial(
                fact_qa_item_scores,
                backend=judge,
                cache=_judge_cache(judge),
                progress=recorder.stage("fact_qa"),
            )
        clock = time.perf_counter()
        item_scores = metrics_module.score_items(
            predictions,
            items,
            [m for m in metrics if m in metrics_module.METRIC_NAMES],
            fact_qa_scorer=scorer,
            progress=recorder.stage("score"),
        )
        timings["score"] = time.perf_counter() - clock
        if "lfqa" in metrics:
            assert judge is not None
            stage, clock = "lfqa", time.perf_counter()
            item_scores.update(_lfqa_scores(items, predictions, judge, recorder))
            timings["lfqa"] = time.perf_counter() - clock
        if "entailment" in metrics:
            assert judge is not None
            stage, clock = "entailment", time.perf_counter()
            item_scores.update(_entailment_scores(items, predictions, judge, recorder))
            timings["entailment"] = time.perf_counter() - clock
        run.metrics, run.stratified = split_aggregate(
            metrics_module.aggregate(item_scores, items), list(item_scores)
        )
        run.n_items = len(items)
        timings["total"] = time.perf_counter() - begin
        run.timings = {key: round(value, 3) for key, value in timings.items()}
        run.results_path = _write_results(run, _results_document(run, items, predictions, item_scores))
        run.status, run.finished = BenchmarkRun.Status.DONE, timezone.now()
        run.save()
    except Exception as error:
        run.status, run.finished = BenchmarkRun.Status.FAILED, timezone.now()
        model = f" with model {run.model_name}" if run.model_name and stage == "generate" else ""
        run.error = f"stage '{stage}'{model}: {type(error).__name__}: {error}"
        run.timings = {key: round(value, 3) for key, value in timings.items()}
        run.save(update_fields=["status", "finished", "error", "timings"])
        logger.exception("BenchmarkRun(%s) failed", run.pk)
        _announce(run)
        raise
    logger.info("BenchmarkRun(%s) done: %s", run.pk, run.metrics)
    _announce(run)
    return run


def _announce(run: BenchmarkRun) -> None:
    """``benchmark.finished`` for a run that ended (done or failed), once per ending."""
    from webhooks.events import emit
    from webhooks.models import EventType

    data = {
        "run": {
            "id": run.pk,
            "status": run.status,
            "system": run.system,
            "split": run.split,
            "release": run.release_id,
            "metrics": run.metrics,
            "n_items": run.n_items,
            "error": run.error,
            "finished": run.finished.isoformat() if run.finished else None,
        }
    }
    stamp = run.finished.isoformat() if run.finished else ""
    emit(EventType.BENCHMARK_FINISHED, f"benchmark.finished:{run.pk}:{stamp}", data)
