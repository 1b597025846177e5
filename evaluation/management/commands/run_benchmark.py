"""``manage.py run_benchmark --release DIR --system S``: a baseline and its metrics on a release split."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from django.core.management.base import CommandError

from config.commands import JsonCommand
from evaluation.baselines import SYSTEMS
from evaluation.models import BenchmarkRun
from evaluation.services.execution import execute_run
from evaluation.services.items import (
    DEFAULT_SYLLABUS_DECODING,
    SPLITS,
    SYLLABUS_DECODINGS,
    BenchmarkInputError,
)
from evaluation.services.runs import JUDGES, RunRequest, prepare_run
from evaluation.tasks import gpu_run_benchmark
from exports.release_files import ReleaseError


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(value)
    return number


def format_table(run: BenchmarkRun) -> list[str]:
    """Overall and per-question-type figures of a done run as aligned text lines."""
    keys = [key for key in run.metrics if key != "n"]
    header = f"{'group':<22}{'n':>6}" + "".join(f"{key:>16}" for key in keys)

    def line(label: str, values: dict[str, Any]) -> str:
        cells = "".join(
            f"{values[key]:>16.4f}" if isinstance(values.get(key), float) else f"{'-':>16}" for key in keys
        )
        return f"{label:<22}{values.get('n', 0):>6}{cells}"

    lines = [header, line("overall", run.metrics)]
    for group, values in (run.stratified.get("question_type") or {}).items():
        lines.append(line(group, values))
    return lines


class Command(JsonCommand):
    help = (
        "Run a SyllabusQA baseline (search, zero-shot, rag, cot, sft) on a release split and score it "
        "(ROUGE-L, BERTScore, Fact-QA, LFQA, entailment), or zero-shot multiple choice on a SciQ-style "
        "release "
        "(accuracy: options scored by log-likelihood with a local model, a letter from --model openai). "
        "Runs as a job on the gpu queue unless --sync; an identical "
        "earlier run is reused unless --force. Writes <var>/benchmarks/<run id>.json and prints a table."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--release", required=True, type=Path, help="The release directory.")
        parser.add_argument("--system", required=True, choices=SYSTEMS, help="The baseline to run.")
        parser.add_argument("--split", default="test", choices=SPLITS, help="Split to answer (default test).")
        parser.add_argument(
            "--metrics",
            default="",
            help="Comma list of rougeL, bertscore, factqa, lfqa, entailment (QA releases; default "
            "rougeL,bertscore) or "
            "accuracy (multiple-choice releases, the default there).",
        )
        parser.add_argument(
            "--model",
            help="A Hugging Face model directory, or 'openai' for the LLM_API_BASE/LLM_MODEL endpoint "
            "(default: the packaged SmolLM2-135M-Instruct).",
        )
        parser.add_argument("--limit", type=_positive, help="Only the first N items of the split.")
        parser.add_argument(
            "--adapter", help="LoRA adapter directory for --system sft (default: fine-tune on train first)."
        )
        parser.add_argument(
            "--judge",
            default="none",
            choices=JUDGES,
            help="Judge for factqa/lfqa/entailment: openai (LLM_* environment) or local (SmolLM2). "
            "Default none.",
        )
        parser.add_argument(
            "--max-new-tokens", type=_positive, default=256, help="Generation budget per answer (256)."
        )
        parser.add_argument("--sft-steps", type=_positive, help="Fine-tuning steps (SftConfig.max_steps).")
        parser.add_argument(
            "--sft-train-items", type=_positive, help="Fine-tune on the first N train items only."
        )
        parser.add_argument(
            "--syllabus-decoding",
            default=DEFAULT_SYLLABUS_DECODING,
            choices=SYLLABUS_DECODINGS,
            help="How syllabus texts are read: mac_roman (as imported, the faithful reading; default) or "
            "iso-8859-1 (the SyllabusQA authors' reading of the Mac Roman files, to compare with their "
            "figures). Part of the parameters an identical earlier run must match.",
        )
        parser.add_argument("--sync", action="store_true", help="Run in this process instead of on a worker.")
        parser.add_argument("--force", action="store_true", help="Run again even if an identical run exists.")

    def handle(self, *args: Any, **options: Any) -> None:
        overrides: dict[str, Any] = {}
        if options["sft_steps"] is not None:
            overrides["max_steps"] = options["sft_steps"]
        if options["sft_train_items"] is not None:
            overrides["max_train_items"] = options["sft_train_items"]
        if overrides and options["system"] != "sft":
            raise CommandError("--sft-steps / --sft-train-items only apply to --system sft")
        request = RunRequest(
            release_dir=options["release"],
            system=options["system"],
            split=options["split"],
            metrics=tuple(m for m in options["metrics"].split(",") if m.strip()),
            model=options["model"],
            limit=options["limit"],
            adapter=options["adapter"],
            judge=options["judge"],
            max_new_tokens=options["max_new_tokens"],
            sft_overrides=tuple(sorted(overrides.items())),
            syllabus_decoding=options["syllabus_decoding"],
        )
        try:
            run, reused = prepare_run(request, force=options["force"])
        except (BenchmarkInputError, ReleaseError) as error:
            raise CommandError(str(error)) from error
        task_id: Optional[str] = None
        if run.status != BenchmarkRun.Status.DONE and not reused:
            if options["sync"]:
                try:
                    run = execute_run(run.pk, notify=self._notify)
                except Exception:  # stored on the run; report it below
                    run.refresh_from_db()
            else:
                task_id = gpu_run_benchmark.delay(run.pk).id
                run.task_id = task_id
                run.save(update_fields=["task_id"])
        summary = {
            "run": run.pk,
            "status": run.status,
            "reused": reused,
            "release": str(run.release),
            "split": run.split,
            "system": run.system,
            "model": run.model_name,
            "n_items": run.n_items,
            "metrics": run.metrics,
            "results_path": run.results_path,
            "task": task_id or run.task_id or None,
        }
        if run.status == BenchmarkRun.Status.DONE:
            lines = [f"BenchmarkRun({run.pk}) {run.system} on {run.release} {run.split}"]
            lines += (
                ["(reused an identical earlier run; --force runs again)"] if reused else []
            ) + format_table(run)
        elif run.status == BenchmarkRun.Status.FAILED:
            self.emit({**summary, "error": run.error}, [f"BenchmarkRun({run.pk}) failed: {run.error}"])
            raise CommandError(f"BenchmarkRun({run.pk}) failed: {run.error}")
        else:
            lines = [f"BenchmarkRun({run.pk}) {run.status}; follow it at /benchmarks/run/{run.pk}/."]
        self.emit(summary, lines)

    def _notify(self, progress: dict[str, Any]) -> None:
        self.progress(progress["stage"], progress["done"], progress["total"])
