"""Benchmark runs requested: check a request for a release split and create its :class:`BenchmarkRun`.

``prepare_run`` checks the request (release, split, syllabi, metrics, judge) before anything is queued,
and returns an identical earlier run instead of a new one unless ``force`` is set, so asking twice never
recomputes. :func:`evaluation.services.execution.execute_run` then runs it (the ``gpu_run_benchmark``
task, ``run_benchmark --sync``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

from evaluation.baselines import SystemOptions
from evaluation.entailment import ENTAILMENT_PROMPTS
from evaluation.llm import SMOLLM2_GGUF
from evaluation.mcq import CHAT_TEMPLATES, LOGLIK_TEMPLATE, read_mcq_split
from evaluation.models import BenchmarkRun
from evaluation.prompting import PROMPT_DIR, load_template
from evaluation.schema import (
    JUDGES,
    MCQ_SYSTEMS,
    OPENAI_MODEL,
    SYSTEMS,
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
from exports.release_store import release_root
from exports.services.releases import register_shared

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
MCQ_KIND = "mcq"  # Release.kind of SciQ-style (multiple-choice) releases

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
    """The run's choices are known (system, split, decoding, judge, metrics, limit), then its model."""
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
    _validate_model(request)


def _validate_model(request: RunRequest) -> None:
    """The model, the adapter and the endpoint a run needs exist and fit its system."""
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
    release = register_shared(request.release_dir)
    # Fails early, naming missing syllabi or a bad file; a split without items is refused (n=0).
    if mcq:
        n_items = len(read_mcq_split(release_root(release), request.split)[: request.limit])
    else:
        n_items = len(
            load_split_items(release_root(release), request.split, request.limit, request.syllabus_decoding)
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


def queue_run(release: Release, choices: dict[str, Any]) -> tuple[BenchmarkRun, bool]:
    """Start a run from the leaderboard form's cleaned choices: prepare it and queue it on ``gpu``.

    The leaderboard page and the REST API both come here. An identical run already done or queued is
    reused (not queued again).

    Args:
        release: the release to run on.
        choices: ``system``, ``split``, ``metrics``, ``model`` (``"local"`` for the bundled model),
            ``limit`` and ``judge``, as :class:`evaluation.forms.StartBenchmarkForm` cleans them.

    Returns:
        The run and whether it was reused.

    Raises:
        BenchmarkInputError, ReleaseError: the choices do not fit the release.
    """
    from evaluation.forms import LOCAL_MODEL
    from evaluation.tasks import gpu_run_benchmark

    run_request = RunRequest(
        release_dir=release_root(release),
        system=choices["system"],
        split=choices["split"],
        metrics=tuple(choices["metrics"]),
        model=None if choices.get("model") in (None, "", LOCAL_MODEL) else choices["model"],
        limit=choices.get("limit"),
        judge=choices.get("judge") or "none",
    )
    run, reused = prepare_run(run_request)
    if not reused and run.status == BenchmarkRun.Status.QUEUED:
        try:
            run.task_id = gpu_run_benchmark.delay(run.pk).id or ""
        except Exception:  # only when tasks run eagerly: the failure is stored on the run
            logger.exception("BenchmarkRun(%s) failed", run.pk)
        else:
            run.save(update_fields=["task_id"])
    return run, reused
