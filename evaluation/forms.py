"""The Start benchmark form of a release's leaderboard page: system, split, metrics, model, judge, limit."""

from __future__ import annotations

import os
from typing import Any

from django import forms

from evaluation.schema import JUDGES, MCQ_SYSTEMS, OPENAI_MODEL, SYSTEMS
from evaluation.services.items import SPLITS
from exports.models import Release

QA_METRIC_CHOICES = [
    ("rougeL", "ROUGE-L"),
    ("bertscore", "BERTScore"),
    ("factqa", "Fact-QA (needs a judge)"),
    ("lfqa", "LFQA (needs a judge)"),
    ("entailment", "Entailment (needs a judge)"),
]
MCQ_METRIC_CHOICES = [("accuracy", "Accuracy (choosing the answer among the options)")]
LOCAL_MODEL = "local"

#: Words of a :class:`~evaluation.services.items.BenchmarkInputError` message -> the field to show it on.
ERROR_WORDS = (("metric", "metrics"), ("split", "split"), ("system", "system"), ("judge", "judge"))


def endpoint_configured() -> bool:
    """True when ``LLM_API_BASE`` and ``LLM_MODEL`` name an OpenAI-compatible endpoint."""
    return bool(os.environ.get("LLM_API_BASE", "").strip() and os.environ.get("LLM_MODEL", "").strip())


class StartBenchmarkForm(forms.Form):
    """A run on one release; the choices depend on its kind (open QA or multiple choice)."""

    system = forms.ChoiceField()
    split = forms.ChoiceField(choices=[(s, s) for s in SPLITS], initial="test")
    metrics = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    model = forms.ChoiceField(label="Model")
    judge = forms.ChoiceField(
        choices=[(j, j) for j in JUDGES], initial="none", label="Judge (Fact-QA, LFQA, entailment)"
    )
    limit = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1_000_000,
        label="Only the first N items",
        help_text="Empty: all.",
    )

    def __init__(self, release: Release, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = release
        self.mcq = release.kind == "mcq"
        systems = MCQ_SYSTEMS if self.mcq else SYSTEMS
        self.fields["system"].choices = [(s, s) for s in systems]
        self.fields["system"].initial = systems[0]
        choices = MCQ_METRIC_CHOICES if self.mcq else QA_METRIC_CHOICES
        self.fields["metrics"].choices = choices
        self.fields["metrics"].initial = ["accuracy"] if self.mcq else ["rougeL"]
        local = "SmolLM2-135M-Instruct on this machine" + (
            " (options scored by likelihood)" if self.mcq else ""
        )
        models = [(LOCAL_MODEL, local)]
        if endpoint_configured():
            models.append(
                (OPENAI_MODEL, f"the OpenAI-compatible endpoint ({os.environ['LLM_MODEL'].strip()})")
            )
        self.fields["model"].choices = models
        self.fields["model"].initial = LOCAL_MODEL
        if self.mcq:
            del self.fields["judge"]

    def place_error(self, message: str) -> None:
        """Show a service error next to the field it is about (or above the form)."""
        lowered = message.lower()
        for word, field in ERROR_WORDS:
            if word in lowered and field in self.fields:
                self.add_error(field, message)
                return
        self.add_error(None, message)
