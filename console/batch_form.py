"""The "New batch" form: what ``launch_batch`` takes as options, as one validated web form.

It turns typed values into the same :class:`annotation.services.batches.BatchSpec` the command builds
(qualification choices through ``crowd.services.launching.qualification_options``), so the page and the
command create and publish batches through one service. Each bad value is reported on its own field.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Optional

from django import forms

from annotation import question_types as qt
from annotation.batch_options import MAX_AUTO_APPROVE_SECONDS
from annotation.hits import BuiltFrom, HitHandler, handler_for, kinds_where
from annotation.models import Batch, Corpus, Document
from annotation.platforms import Platform
from annotation.screening.quiz import MAX_QUIZ_QUESTIONS
from annotation.services.batches import BatchSpec, BatchSpecError, check_time_limit, default_time_limit
from crowd.gold import DEFAULT_ATTENTION_FAILURES, attention_default_rule
from crowd.providers.traits import traits_for

KINDS = [
    (value, label) for value, label in Batch.Kind.choices if handler_for(value).built_from != BuiltFrom.FOOLED
]
"""Every kind a researcher creates here, syllabus QA (the usual choice) first (a model verdict validation
batch is made from its syllabus batch's page)."""
STAGE1_KINDS = kinds_where(lambda h: h.stage2_kind is not None)
"""Kinds whose approved questions a stage-2 batch validates: the choices of a stage-2 batch's parent."""
QUALIFYING_KINDS = kinds_where(lambda h: h.qualifies_workers)
"""Kinds whose approved workers a new batch may require (screening)."""
SPLIT_CHOICES = [(split, split) for split in reversed(qt.SPLITS)]  # test first: the usual choice
MAX_DOCUMENT_NAMES = 500


def _usd(label: str, required: bool = False, help_text: str = "") -> forms.DecimalField:
    return forms.DecimalField(
        label=label,
        required=required,
        min_value=Decimal("0"),
        max_value=Decimal("100000"),
        decimal_places=2,
        help_text=help_text,
    )


class NewBatchForm(forms.Form):
    """Every option of a new batch; :meth:`spec` builds the service's ``BatchSpec``."""

    kind = forms.ChoiceField(label="HIT kind", choices=KINDS, initial=KINDS[0][0])
    provider = forms.ChoiceField(label="Platform", choices=Platform.choices, initial=Platform.LOCAL)
    name = forms.CharField(
        label="Batch name", max_length=200, required=False, help_text="Empty: kind and corpus."
    )
    corpus = forms.ModelChoiceField(
        label="Corpus",
        queryset=Corpus.objects.order_by("name"),
        to_field_name="name",
        required=False,
        help_text="Syllabi for syllabus and screening batches, textbook passages for SciQ questions.",
    )
    documents = forms.CharField(
        label="Documents",
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Syllabus and screening batches: document names, one per line (empty: every document).",
    )
    parent = forms.ModelChoiceField(
        label="Stage-1 batch to validate",
        queryset=Batch.objects.filter(kind__in=STAGE1_KINDS).order_by("-created"),
        required=False,
        help_text="SciQ validation batches: the question-writing batch whose accepted questions are checked.",
    )
    release = forms.ModelChoiceField(
        label="Release",
        queryset=None,
        required=False,
        help_text="Expert batches: the release whose questions the expert answers.",
    )
    split = forms.ChoiceField(label="Release split", choices=SPLIT_CHOICES, initial="test", required=False)
    sample = forms.IntegerField(
        label="Questions sampled", min_value=1, max_value=100000, required=False, help_text="Expert batches."
    )
    limit = forms.IntegerField(label="At most this many HITs", min_value=1, max_value=100000, required=False)
    assignments = forms.IntegerField(label="Workers per HIT", min_value=1, max_value=100, initial=1)
    reward = _usd("Reward per assignment (USD)", required=True, help_text="Such as 0.50.")
    reward.initial = Decimal("0.00")
    time_limit = forms.IntegerField(
        label="Time limit per HIT (minutes)", min_value=1, max_value=24 * 60, initial=60
    )
    expected_minutes = forms.IntegerField(
        label="Expected minutes of work per HIT",
        min_value=1,
        max_value=24 * 60,
        required=False,
        help_text="For the hourly pay shown before publishing (empty: the time limit).",
    )
    budget = _usd("Budget cap (USD, fees included)", help_text="The batch stops there. Empty: no cap.")
    auto_approve_hours = forms.IntegerField(
        label="Approve unreviewed work after (hours)",
        min_value=1,
        max_value=MAX_AUTO_APPROVE_SECONDS // 3600,
        required=False,
        help_text="Work nobody reviewed by then is approved and paid; a platform that approves on its own "
        "is told the same delay. Empty: work waits for your review (or the platform's own delay).",
    )
    max_pairs_per_worker = forms.IntegerField(
        label="Cap: QA pairs per worker", min_value=1, required=False, help_text="SyllabusQA batches."
    )
    max_pairs_per_document = forms.IntegerField(
        label="Cap: QA pairs per worker per syllabus", min_value=1, required=False
    )
    quiz = forms.IntegerField(
        label="Known-answer questions per HIT",
        min_value=0,
        max_value=MAX_QUIZ_QUESTIONS,
        required=False,
        help_text="Questions on the syllabus from its reference pairs, graded after submission. Screening: "
        "advice (empty: 3). Syllabus QA: gold answers the quality-check thresholds act on (empty: none).",
    )
    model_loop = forms.ChoiceField(
        label="Model in the loop",
        choices=[
            ("off", "Off"),
            ("show", "Show the model's answer on each card"),
            ("ask", "Show it and ask for a question the model gets wrong"),
        ],
        initial="off",
        required=False,
        help_text="Syllabus batches: the chosen system answers each card once it is written (never "
        "delays the worker); each pair records the verdict.",
    )
    model_system = forms.ChoiceField(
        label="Model",
        choices=[
            ("search", "Search baseline (BM25 top chunk, CPU)"),
            ("rag", "RAG (LLM with the top-5 chunks; needs a gpu-queue worker)"),
        ],
        initial="search",
        required=False,
        help_text="Which system answers the cards.",
    )
    model_judge = forms.ChoiceField(
        label="Model judge",
        choices=[
            ("lexical", "Lexical Match"),
            ("rouge_l", "ROUGE-L F1 at 0.3 or above"),
            ("fact_qa", "Fact-QA F1 at 0.3 or above (an LLM judge; needs a gpu-queue worker)"),
        ],
        initial="lexical",
        required=False,
        help_text="How the model's answer is compared with the worker's.",
    )
    model_validate = forms.BooleanField(
        label="Validate fooled verdicts",
        required=False,
        help_text="A second worker confirms or disputes each pair the model got wrong, as it is submitted.",
    )
    require_qualification = forms.ModelChoiceField(
        label="Only workers approved in",
        queryset=Batch.objects.filter(kind__in=QUALIFYING_KINDS).order_by("-created"),
        required=False,
        empty_label="anyone",
    )
    exclude_batches = forms.ModelMultipleChoiceField(
        label="Keep out workers of",
        queryset=Batch.objects.order_by("-created"),
        required=False,
        help_text="Such as the screening batch itself, so screened workers do not take it again.",
    )
    title = forms.CharField(label="Title shown to workers", max_length=200, required=False)
    description = forms.CharField(
        label="Description shown to workers", widget=forms.Textarea(attrs={"rows": 2}), required=False
    )

    gold_rate = forms.FloatField(
        label="Gold items per 100 HITs",
        min_value=0,
        max_value=100,
        required=False,
        help_text="Questions with a known verdict (manage.py attach_gold) served among the validation HITs.",
    )
    attention_rate = forms.FloatField(
        label="Attention items per 100 HITs", min_value=0, max_value=100, required=False
    )
    gold_warn_below = forms.FloatField(
        label="Flag a validator under this gold accuracy (%)", min_value=0, max_value=100, required=False
    )
    gold_block_below = forms.FloatField(
        label="Block a validator under this gold accuracy (%)",
        min_value=0,
        max_value=100,
        required=False,
        help_text="Locally at once, then on the platform.",
    )
    gold_min_answers = forms.IntegerField(
        label="Gold answers before acting",
        min_value=0,
        max_value=1000,
        required=False,
        help_text="Default 5.",
    )
    attention_block_failures = forms.IntegerField(
        label="Failed attention items that block",
        min_value=0,
        max_value=1000,
        required=False,
        help_text=f"Default {DEFAULT_ATTENTION_FAILURES}"
        + (f" ({attention_default_rule()})" if attention_default_rule() else "")
        + "; 0: never.",
    )

    def field_kinds(self) -> dict[str, list[str]]:
        """See :func:`field_kinds` (the template reads it as ``form.field_kinds``)."""
        return field_kinds()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from exports.models import Release

        super().__init__(*args, **kwargs)
        self.fields["release"].queryset = Release.objects.order_by("name", "-created")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        kind = data.get("kind")
        handler: Optional[HitHandler] = handler_for(kind) if kind in Batch.Kind.values else None
        built_from = handler.built_from if handler else None
        if built_from == BuiltFrom.RELEASE:
            if not data.get("release"):
                self.add_error("release", "Choose the release whose questions the expert answers.")
            if not data.get("sample"):
                self.add_error("sample", "Say how many questions the expert answers.")
            if data.get("provider") and traits_for(data["provider"]).external:
                self.add_error("provider", "Expert batches run on the local crowd.")
            return data
        corpus: Optional[Corpus] = data.get("corpus")
        if built_from == BuiltFrom.QUESTIONS:
            parent: Optional[Batch] = data.get("parent")
            if parent is None:
                self.add_error("parent", "Choose the SciQ question batch whose questions are validated.")
            elif corpus is None:
                data["corpus"] = parent.corpus
        elif corpus is None and "corpus" not in self.errors:
            self.add_error("corpus", "Choose a corpus.")
        names = self.document_names()
        if names and built_from != BuiltFrom.DOCUMENTS:
            self.add_error("documents", "Only syllabus and screening batches take a list of documents.")
        elif names and data.get("corpus") is not None:
            known = set(
                Document.objects.filter(corpus=data["corpus"], name__in=names).values_list("name", flat=True)
            )
            missing = [n for n in names if n not in known]
            if missing:
                shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
                self.add_error("documents", f"Not in corpus {data['corpus'].name}: {shown}")
        if (data.get("model_loop") or "off") != "off" and not (handler and handler.model_in_the_loop):
            self.add_error("model_loop", "Only syllabus QA batches have a model in the loop.")
        if data.get("quiz") and not (handler and (handler.has_quiz or handler.gold_quiz)):
            self.add_error("quiz", "Known-answer questions are for screening and syllabus QA batches only.")
        limit = data.get("time_limit")
        if limit is None and handler:
            limit = data["time_limit"] = default_time_limit(kind)
        elif limit is not None and handler and "time_limit" not in self.errors:
            try:
                check_time_limit(kind, limit)
            except BatchSpecError as exc:
                self.add_error("time_limit", str(exc))
        expected = data.get("expected_minutes")
        if expected and limit and expected > limit:
            self.add_error("expected_minutes", "More than the time limit: raise the limit or lower this.")
        return data

    def document_names(self) -> tuple[str, ...]:
        """The typed document names, one per line, without blanks or repeats."""
        raw = self.cleaned_data.get("documents") or ""
        names = dict.fromkeys(line.strip() for line in raw.splitlines() if line.strip())
        if len(names) > MAX_DOCUMENT_NAMES:
            self.add_error("documents", f"At most {MAX_DOCUMENT_NAMES} names.")
            return ()
        return tuple(names)

    def spec(self, options: dict[str, Any]) -> BatchSpec:
        """The service's ``BatchSpec`` for the cleaned form (``options``: the qualification options)."""
        data = self.cleaned_data
        if data.get("auto_approve_hours"):
            options = {**options, "auto_approve_seconds": data["auto_approve_hours"] * 3600}
        gold = {key: data[key] for key in GOLD_FIELDS if data.get(key) is not None}
        if gold and data["kind"] in serving_kinds():
            options = {**options, **gold}
        elif gold and data["kind"] in quiz_gold_kinds():
            options = {**options, **{k: v for k, v in gold.items() if k in THRESHOLD_FIELDS}}
        return BatchSpec(
            kind=data["kind"],
            corpus=data["corpus"].name,
            provider=data["provider"],
            name=data.get("name") or "",
            title=data.get("title") or "",
            description=data.get("description") or "",
            limit=data.get("limit"),
            assignments=data["assignments"],
            reward_cents=cents(data["reward"]) or 0,
            time_limit_minutes=data["time_limit"],
            max_pairs_per_worker=data.get("max_pairs_per_worker"),
            max_pairs_per_worker_per_document=data.get("max_pairs_per_document"),
            budget_cap_cents=cents(data.get("budget")),
            documents=self.document_names(),
            parent=data["parent"].pk if data.get("parent") else None,
            options=self.model_loop_options(options),
            quiz=data.get("quiz"),
        )

    def model_loop_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the batch option ``model_in_the_loop`` when the form turns it on."""
        mode = self.cleaned_data.get("model_loop") or "off"
        if mode == "off":
            return options
        judge = self.cleaned_data.get("model_judge") or "lexical"
        system = self.cleaned_data.get("model_system") or "search"
        validate = bool(self.cleaned_data.get("model_validate"))
        loop = {"mode": mode, "system": system, "judge": judge, "validation": validate}
        return {**options, "model_in_the_loop": loop}


def field_kinds() -> dict[str, list[str]]:
    """The fields that apply to some kinds only, with those kinds (the page hides the others).

    Fields not named here (platform, pay, limits, who may work, what workers see) apply to every kind.
    """
    documents = kinds_where(lambda h: h.built_from == BuiltFrom.DOCUMENTS)
    release = kinds_where(lambda h: h.built_from == BuiltFrom.RELEASE)
    return {
        "corpus": [k for k, _ in KINDS if k not in release],
        "documents": list(documents),
        "parent": list(kinds_where(lambda h: h.built_from == BuiltFrom.QUESTIONS)),
        "release": list(release),
        "split": list(release),
        "sample": list(release),
        "max_pairs_per_worker": list(
            kinds_where(lambda h: h.built_from == BuiltFrom.DOCUMENTS and not h.has_quiz)
        ),
        "max_pairs_per_document": list(
            kinds_where(lambda h: h.built_from == BuiltFrom.DOCUMENTS and not h.has_quiz)
        ),
        "quiz": list(kinds_where(lambda h: h.has_quiz or h.gold_quiz)),
        "model_loop": list(kinds_where(lambda h: h.model_in_the_loop)),
        "model_system": list(kinds_where(lambda h: h.model_in_the_loop)),
        "model_judge": list(kinds_where(lambda h: h.model_in_the_loop)),
        "model_validate": list(kinds_where(lambda h: h.verdict_validation_kind is not None)),
        **{name: serving_kinds() for name in GOLD_FIELDS},
        **{name: serving_kinds() + quiz_gold_kinds() for name in THRESHOLD_FIELDS},
    }


GOLD_FIELDS = (
    "gold_rate",
    "attention_rate",
    "gold_warn_below",
    "gold_block_below",
    "gold_min_answers",
    "attention_block_failures",
)
"""Form fields stored under the same ``Batch.options`` key (crowd.gold reads them)."""
THRESHOLD_FIELDS = ("gold_warn_below", "gold_block_below", "gold_min_answers")
"""Those that also act on a syllabus QA batch's known-answer questions (it has no items or rates)."""


def quiz_gold_kinds() -> list[str]:
    """Kinds whose known-answer questions count as gold (syllabus QA)."""
    return kinds_where(lambda h: h.gold_quiz)


def serving_kinds() -> list[str]:
    """Kinds whose batch serves gold and attention items, itself or in its stage 2."""

    def serves(handler: HitHandler) -> bool:
        stage2 = handler.stage2_kind
        return handler.serves_gold or (stage2 is not None and handler_for(stage2).serves_gold)

    return kinds_where(serves)


def cents(amount: Optional[Decimal]) -> Optional[int]:
    """USD -> whole cents (None stays None)."""
    return None if amount is None else int((amount * 100).to_integral_value())
