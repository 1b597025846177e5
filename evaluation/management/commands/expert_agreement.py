"""``manage.py expert_agreement``: the "human" leaderboard row from an expert batch (SyllabusQA 2.3)."""

from __future__ import annotations

import json
from typing import Any, Optional

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotation.models import Batch
from evaluation.llm import HFCausalLMBackend, LLMBackend, LLMConfigurationError, OpenAIChatBackend
from evaluation.services.human import HumanAgreementError, compute_human_agreement
from exports.release_files import ReleaseError
from exports.services.releases import register_shared


def judge_backend(name: str) -> Optional[LLMBackend]:
    """The Fact-QA judge named on the command line (``openai`` reads LLM_API_BASE / LLM_MODEL).

    Raises:
        LLMConfigurationError: ``openai`` without its environment variables, or the local model missing.
    """
    if name == "openai":
        return OpenAIChatBackend.from_env()
    if name == "local":
        return HFCausalLMBackend()
    return None


class Command(BaseCommand):
    help = (
        "Agreement between expert and crowd answers (ROUGE-L, BERTScore, question-type kappa, Fact-QA "
        "with a judge), stored as the release's 'human' benchmark run; the last line is JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--release", required=True, help="The release directory the expert batch sampled."
        )
        parser.add_argument("--batch", type=int, help="One expert batch (default: every one of the release).")
        parser.add_argument(
            "--judge",
            choices=("openai", "local", "none"),
            default="none",
            help="Fact-QA judge: an OpenAI-compatible endpoint (LLM_* variables), local SmolLM2, or none.",
        )
        parser.add_argument(
            "--metrics",
            default="rouge_l,bertscore",
            help="Comma-separated text metrics (rouge_l, bertscore); fact_qa is added with a judge.",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            release = register_shared(opts["release"])
        except ReleaseError as exc:
            raise CommandError(str(exc)) from exc
        batch = None
        if opts["batch"] is not None:
            batch = Batch.objects.filter(pk=opts["batch"]).first()
            if batch is None:
                raise CommandError(f"no Batch({opts['batch']})")
        metrics = [m.strip() for m in opts["metrics"].split(",") if m.strip()]
        try:
            judge = judge_backend(opts["judge"])
            run = compute_human_agreement(release, batch, judge, metrics=metrics)
        except (HumanAgreementError, LLMConfigurationError) as exc:
            raise CommandError(str(exc)) from exc
        for key, value in run.metrics.items():
            shown = f"{value:.4f}" if isinstance(value, float) else value
            self.stdout.write(f"{key}: {shown}")
        self.stdout.write(
            json.dumps(
                {
                    "run": run.pk,
                    "release": release.pk,
                    "split": run.split,
                    "system": run.system,
                    "model": run.model_name,
                    "n_items": run.n_items,
                    "metrics": run.metrics,
                    "results_path": run.results_path,
                },
                sort_keys=True,
            )
        )
