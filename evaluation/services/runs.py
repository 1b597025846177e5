"""Benchmark runs: create a :class:`BenchmarkRun` for a release split, execute it, store what it measured.

``prepare_run`` checks the request (release, split, syllabi, metrics, judge) before anything is queued,
and returns an identical earlier run instead of a new one unless ``force`` is set, so asking twice never
recomputes. ``execute_run`` is what the ``gpu_run_benchmark`` task and ``run_benchmark --sync`` call: it
loads the items, fine-tunes first when an SFT run has no adapter, answers with
:func:`evaluation.baselines.run_system`, scores with :mod:`evaluation.metrics` (plus the Fact-QA,
LFQA and entailment judges when asked), writes the per-item JSON file and stores the figures on the
row. A done run is never recomputed, so a redelivered task (acks_late) is harmless; an exception marks
the run failed with its message and is re-raised.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Optional

from django.conf import settings
from django.utils import timezone

from config.atomic import atomic_write
from evaluation import metrics as metrics_module
from evaluation.baselines import SystemOptions, run_system
from evaluation.entailment import ENTAILMENT_PROMPTS, EntailmentJudge, entailment_item_scores
from evaluation.factqa import JsonFileJudgeCache, fact_qa_item_scores
from evaluation.llm import SMOLLM2_GGUF, HFCausalLMBackend, LLMBackend, OpenAIChatBackend
from evaluation.mcq import CHAT_TEMPLATES, LOGLIK_TEMPLATE, read_mcq_split
from evaluation.models import BenchmarkRun
from evaluation.prompting import PROMPT_DIR, load_template
from evaluation.schema import (
    JUDGES,
    MCQ_SYSTEMS,
    OPENAI_MODEL,
    SYSTEMS,
    Prediction,
    ProgressCallback,
    QAItem,
    answer_source,
)
from evaluation.services.items import (
    DEFAULT_SYLLABUS_DECODING,
    SPLITS,
    SYLLABUS_DECODINGS,
    BenchmarkInputError,
    load_split_items,
)
from exports.models import Release
from exports.release_files import ReleaseError, read_manifest
from exports.services.releases import register_release

logger = logging.getLogger(__name__)

#: Metric names the command accepts, in the order they are computed; aliases map onto them.
#: ``accuracy`` is the multiple-choice (SciQ) metric; the others score SyllabusQA-style answers.
METRICS: tuple[str, ...] = ("rouge_l", "bertscore", "fact_qa", "lfqa", "entailment", "accuracy")
#: Metrics an LLM judge computes (a run asking for one needs ``--judge``).
JUDGED_METRICS: tuple[str, ...] = ("fact_qa", "lfqa", "entailment")
QA_METRICS: tuple[str, ...] = ("rouge_l", "bertscore")
MCQ_METRICS: tuple[str, ...] = ("accuracy",)
METRIC_ALIASES: dict[str, str] = {
    "accuracy": "accuracy",
    "acc": "accuracy",
    "rougel": "rouge_l",
    "rouge_l": "rouge_l",
    "rouge-l": "rouge_l",
    "bertscore": "bertscore",
    "factqa": "fact_qa",
    "fact_qa": "fact_qa",
    "fact-qa": "fact_qa",
    "lfqa": "lfqa",
    "entailment": "entailment",
}
LFQA_KEYS: tuple[str, ...] = ("coherence", "relevance", "factual_consistency", "accuracy")
MCQ_KIND = "mcq"  # Release.kind of SciQ-style (multiple-choice) releases
PROGRESS_SAVE_INTERVAL = 1.0  # seconds between progress writes to the run row

ProgressNotifier = Callable[[dict[str, Any]], None]
#: Parameters added after runs were first stored, with the value such an older run used.
PARAM_DEFAULTS: dict[str, Any] = {"syllabus_decoding": DEFAULT_SYLLABUS_DECODING}


@dataclass(frozen=True)
class RunRequest:
    """What ``run_benchmark`` asks for.

    Attributes:
        release_dir: the release directory (registered on first use).
        system: one of :data:`evaluation.baselines.SYSTEMS`.
        split: ``train``, ``val`` or ``test``.
        metrics: names or aliases from :data:`METRIC_ALIASES`; empty means the release kind's default
            (:data:`QA_METRICS` or :data:`MCQ_METRICS`).
        model: a Hugging Face model directory, ``openai`` (the LLM_* endpoint) or None (SmolLM2).
        limit: only the first N items of the split.
        adapter: a LoRA adapter directory for ``sft``; None fine-tunes one on the train split first.
        judge: ``none``, ``openai`` (LLM_* endpoint) or ``local`` (the default SmolLM2) for Fact-QA/LFQA.
        max_new_tokens: generation budget per answer.
        sft_overrides: SftConfig fields to change (e.g. ``{"max_steps": 5}``).
        syllabus_decoding: how syllabus texts are read (``evaluation.services.items.SYLLABUS_DECODINGS``):
            as imported (``mac_roman``) or as the SyllabusQA authors' code reads them (``iso-8859-1``).
    """

    release_dir: Path
    system: str
    split: str = "test"
    metrics: tuple[str, ...] = ()
    model: Optional[str] = None
    limit: Optional[int] = None
    adapter: Optional[str] = None
    judge: str = "none"
    max_new_tokens: int = 256
    sft_overrides: tuple[tuple[str, Any], ...] = ()
    syllabus_decoding: str = DEFAULT_SYLLABUS_DECODING


def normalize_metrics(names: Sequence[str]) -> tuple[str, ...]:
    """Map metric names and aliases onto :data:`METRICS`, deduplicated, in computing order.

    Raises:
        BenchmarkInputError: naming an unknown metric.
    """
    wanted = set()
    for name in names:
        key = name.strip().lower()
        if not key:
            continue
        if key not in METRIC_ALIASES:
            raise BenchmarkInputError(
                f"unknown metric '{name}'; choose from rougeL, bertscore, factqa, lfqa, entailment, accuracy"
            )
        wanted.add(METRIC_ALIASES[key])
    if not wanted:
        raise BenchmarkInputError("no metric requested")
    return tuple(m for m in METRICS if m in wanted)


def benchmarks_dir() -> Path:
    """Folder of run result files, adapters and judge caches (``<CROWDQA_VAR_DIR>/benchmarks``)."""
    return Path(settings.VAR_DIR) / "benchmarks"


def model_label(system: str, model: Optional[str]) -> str:
    """The ``model_name`` stored on a run: '' for search, else the model directory or endpoint model."""
    if system == "search":
        return ""
    if model == OPENAI_MODEL:
        return f"openai:{os.environ.get('LLM_MODEL', '').strip()}"
    return model or SMOLLM2_GGUF


def prompt_names(system: str, metrics: Sequence[str]) -> list[str]:
    """Names of the prompt templates (``evaluation/prompts``) a run uses, to store their texts."""
    names: list[str] = []
    if system in ("zero-shot", "rag", "sft"):
        names += ["syllabus_system", "syllabus_answer_user"]
    elif system == "cot":
        names += ["syllabus_cot_system", "syllabus_cot_user"]
    if system in ("rag", "cot", "sft"):
        names += ["rag_context", "rag_snippet"]
    if "fact_qa" in metrics:
        names += ["factqa_judge", "factqa_repair"]
    if "lfqa" in metrics:
        names += sorted(p.stem for p in PROMPT_DIR.glob("lfqa_judge*.txt"))
    if "entailment" in metrics:
        names += list(ENTAILMENT_PROMPTS)
    return names


def _judge_label(judge: str) -> Optional[str]:
    """The judge model a run's figures depend on (part of the reuse key): None, endpoint or SmolLM2."""
    if judge == "none":
        return None
    return model_label("judge", OPENAI_MODEL if judge == "openai" else None)


def _request_params(request: RunRequest, metrics: tuple[str, ...]) -> dict[str, Any]:
    options = SystemOptions()
    params: dict[str, Any] = {
        "model": request.model,
        "limit": request.limit,
        "judge": request.judge,
        "judge_model": _judge_label(request.judge),
        "metrics": list(metrics),
        # Always stored: a run read one way is never reused for a request that reads the other way.
        "syllabus_decoding": request.syllabus_decoding,
    }
    if request.system != "search":
        params["max_new_tokens"] = request.max_new_tokens
        params["temperature"] = options.temperature
    if request.system == "search":
        params["chunk_size"], params["chunk_overlap"], params["k"] = (
            options.search_chunk_size,
            options.search_chunk_overlap,
            1,
        )
    elif request.system != "zero-shot":
        params["chunk_size"], params["chunk_overlap"], params["k"] = (
            options.chunk_size,
            options.chunk_overlap,
            options.k,
        )
    if request.system == "sft":
        params["adapter"] = str(Path(request.adapter).resolve()) if request.adapter else None
        if not request.adapter:  # fine-tune first, from --model when given (SftConfig.base_model_dir)
            base = {"base_model_dir": str(Path(request.model).resolve())} if request.model else {}
            params["sft"] = {**dict(request.sft_overrides), **base}
    return params


def _validate(request: RunRequest, metrics: tuple[str, ...]) -> None:
    if request.system not in SYSTEMS:
        raise BenchmarkInputError(f"unknown system '{request.system}'; choose from {', '.join(SYSTEMS)}")
    if request.split not in SPLITS:
        raise BenchmarkInputError(f"unknown split '{request.split}'; choose from {', '.join(SPLITS)}")
    if request.syllabus_decoding not in SYLLABUS_DECODINGS:
        raise BenchmarkInputError(
            f"unknown syllabus decoding '{request.syllabus_decoding}'; "
            f"choose from {', '.join(SYLLABUS_DECODINGS)}"
        )
    if request.judge not in JUDGES:
        raise BenchmarkInputError(f"unknown judge '{request.judge}'; choose from {', '.join(JUDGES)}")
    judged = [m for m in metrics if m in JUDGED_METRICS]
    if judged and request.judge == "none":
        raise BenchmarkInputError(f"metric '{judged[0]}' needs a judge: pass --judge openai or --judge local")
    if request.limit is not None and request.limit < 1:
        raise BenchmarkInputError(f"--limit {request.limit}: must be at least 1")
    if request.model and request.model != OPENAI_MODEL and not Path(request.model).is_dir():
        raise BenchmarkInputError(f"--model {request.model}: not a model directory")
    if request.system == "sft" and request.model == OPENAI_MODEL:
        raise BenchmarkInputError(
            "system 'sft' needs a local model (a LoRA adapter cannot run on an endpoint)"
        )
    if request.adapter and not Path(request.adapter).is_dir():
        raise BenchmarkInputError(f"--adapter {request.adapter}: not a directory")
    if request.adapter and request.system != "sft":
        raise BenchmarkInputError(f"--adapter only applies to system 'sft', not '{request.system}'")
    endpoint_needed = request.model == OPENAI_MODEL or request.judge == "openai"
    if endpoint_needed and not (os.environ.get("LLM_API_BASE") and os.environ.get("LLM_MODEL")):
        raise BenchmarkInputError("an OpenAI-compatible endpoint needs LLM_API_BASE and LLM_MODEL set")


def release_kind(release_dir: Path) -> str:
    """The ``kind`` a release's manifest names (``qa`` or ``mcq``), '' when it cannot be read here."""
    try:
        return str(read_manifest(release_dir).get("kind") or "")
    except ReleaseError:
        return ""  # register_release names the problem


def empty_split_message(release: Release, split: str) -> str:
    """Why a run on an empty split is refused (no run with n=0 is ever scored or listed)."""
    return f"split '{split}' of release {release} has no items; a benchmark needs at least one"


def _validate_kind(request: RunRequest, metrics: tuple[str, ...], mcq: bool) -> None:
    """Systems and metrics that fit the release: accuracy for multiple choice, the others for QA."""
    if mcq:
        if request.system not in MCQ_SYSTEMS:
            raise BenchmarkInputError(
                f"system '{request.system}' answers open questions; a multiple-choice release runs "
                f"{', '.join(MCQ_SYSTEMS)} (the model chooses among the options)"
            )
        wrong = [m for m in metrics if m not in MCQ_METRICS]
        if wrong:
            raise BenchmarkInputError(
                f"metric '{wrong[0]}' does not apply to a multiple-choice release; use accuracy"
            )
        if request.judge != "none":
            raise BenchmarkInputError("a multiple-choice release is scored by accuracy; it needs no judge")
    elif "accuracy" in metrics:
        raise BenchmarkInputError(
            "accuracy scores multiple-choice releases; this release holds open QA pairs"
        )


def mcq_method(model: Optional[str]) -> str:
    """How a multiple-choice run chooses: ``letter`` on an endpoint, else ``loglikelihood`` (local model)."""
    return "letter" if model == OPENAI_MODEL else "loglikelihood"


def mcq_prompt_names(model: Optional[str]) -> list[str]:
    """The prompt templates of a multiple-choice run."""
    return list(CHAT_TEMPLATES) if mcq_method(model) == "letter" else [LOGLIK_TEMPLATE]


def _mcq_params(request: RunRequest, metrics: tuple[str, ...]) -> dict[str, Any]:
    return {
        "model": request.model,
        "limit": request.limit,
        "judge": "none",
        "judge_model": None,
        "metrics": list(metrics),
        "method": mcq_method(request.model),
    }


def find_identical_run(
    release: Release, request: RunRequest, params: dict[str, Any]
) -> Optional[BenchmarkRun]:
    """Return the latest non-failed run with the same release, split, system, model and parameters.

    JSON parameters are compared in Python, not in SQL: JSON equality differs between SQLite and
    PostgreSQL, and the candidate list (one release, split and system) is short.
    """
    candidates = (
        BenchmarkRun.objects.filter(
            release=release,
            split=request.split,
            system=request.system,
            model_name=model_label(request.system, request.model),
        )
        .exclude(status=BenchmarkRun.Status.FAILED)
        .order_by("-pk")
    )
    for run in candidates:
        if all(run.params.get(key, PARAM_DEFAULTS.get(key)) == value for key, value in params.items()):
            return run
    return None


def prepare_run(request: RunRequest, *, force: bool = False) -> tuple[BenchmarkRun, bool]:
    """Check a request and return (run, reused): an identical earlier run, or a new queued one.

    The split file and every syllabus it names are checked here, so a bad request fails before a job
    is queued and leaves no run behind.

    Args:
        request: what to run.
        force: always create a new run.

    Returns:
        The run and whether it is an earlier identical one (done, queued or running).

    Raises:
        BenchmarkInputError: a bad system, split, metric, judge, model, adapter or limit, or syllabi
            that are not imported (named).
        exports.release_files.ReleaseError: the directory is not a release, or its manifest changed.
    """
    mcq = release_kind(Path(request.release_dir)) == MCQ_KIND
    metrics = normalize_metrics(request.metrics or (MCQ_METRICS if mcq else QA_METRICS))
    _validate(request, metrics)
    _validate_kind(request, metrics, mcq)
    if request.model and request.model != OPENAI_MODEL:  # one spelling per model directory, for reuse
        request = replace(request, model=str(Path(request.model).resolve()))
    release = register_release(request.release_dir)
    # Fails early, naming missing syllabi or a bad file; a split without items is refused (n=0).
    if mcq:
        n_items = len(read_mcq_split(Path(release.path), request.split)[: request.limit])
    else:
        n_items = len(
            load_split_items(Path(release.path), request.split, request.limit, request.syllabus_decoding)
        )
    if n_items == 0:
        raise BenchmarkInputError(empty_split_message(release, request.split))
    params = _mcq_params(request, metrics) if mcq else _request_params(request, metrics)
    if not force:
        existing = find_identical_run(release, request, params)
        if existing is not None:
            logger.info("BenchmarkRun(%s) reused (%s)", existing.pk, existing.status)
            return existing, True
    run = BenchmarkRun.objects.create(
        release=release,
        split=request.split,
        system=request.system,
        model_name=model_label(request.system, request.model),
        params=params,
        prompts={
            name: load_template(name)
            for name in (mcq_prompt_names(request.model) if mcq else prompt_names(request.system, metrics))
        },
        metrics_requested=list(metrics),
    )
    logger.info("BenchmarkRun(%s) created: %s on %s %s", run.pk, run.system, release, run.split)
    return run, False


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
    train_items = load_split_items(Path(run.release.path), "train", decoding=_decoding(run))
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
    """Write a run's per-item results to ``<benchmarks_dir>/<run id>.json``; returns the path."""
    path = benchmarks_dir() / f"{run.pk}.json"
    _write_json_atomic(path, document)
    return str(path)


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
            return run
        metrics = tuple(run.metrics_requested)
        clock = time.perf_counter()
        items = load_split_items(Path(run.release.path), run.split, run.params.get("limit"), _decoding(run))
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
        raise
    logger.info("BenchmarkRun(%s) done: %s", run.pk, run.metrics)
    return run
