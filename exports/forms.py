"""The New release form: the options of ``export_release`` as fields, checked by the export service."""

from __future__ import annotations

from typing import Any, Optional

from django import forms

from annotation.models import Batch, Corpus
from crowd.aggregation_terms import DAWID_SKENE, MACE_METHOD, MAJORITY
from exports.services.exporting import ExportRequest, ExportRequestError, validate_request
from exports.verdicts import NO_AGGREGATION

FORMATS = ExportRequest.formats

#: Which form field shows an :class:`ExportRequestError` of each service field.
ERROR_FIELDS = {
    "name": "name",
    "version": "version",
    "source": "source",
    "corpus": "corpus",
    "batches": "batches",
    "ratios": "ratio_train",
    "formats": "formats",
    "publish": "publish",
    "aggregation": "aggregation",
}

#: The stage-2 choices of the form: how a SciQ question's validations decide whether it is released.
AGGREGATION_CHOICES = [
    (DAWID_SKENE, "Dawid-Skene: the validators' verdict, each weighted by how reliable they are"),
    (MAJORITY, "Majority vote of the validators"),
    (MACE_METHOD, "MACE: like Dawid-Skene, discounting validators who answer at random"),
    (NO_AGGREGATION, "Keep every validated question (flags do not leave a question out)"),
]


class ReleaseForm(forms.Form):
    """Name, version, source (a corpus or batches), split options and formats of a new release."""

    name = forms.CharField(max_length=100, help_text="Letters, digits, '.', '_' and '-'.")
    version = forms.CharField(max_length=50, initial="1.0", help_text="A new version for every release.")
    source = forms.ChoiceField(
        choices=[("corpus", "A corpus (every pair not rejected)"), ("batches", "Batches (approved pairs)")],
        initial="corpus",
        widget=forms.RadioSelect,
    )
    corpus = forms.ChoiceField(required=False, choices=())
    batches = forms.MultipleChoiceField(required=False, choices=(), widget=forms.CheckboxSelectMultiple)
    ratio_train = forms.FloatField(min_value=0, max_value=1, initial=0.8, label="Train share")
    ratio_val = forms.FloatField(min_value=0, max_value=1, initial=0.1, label="Validation share")
    ratio_test = forms.FloatField(min_value=0, max_value=1, initial=0.1, label="Test share")
    sciq_mode = forms.BooleanField(
        required=False, label="SciQ mode: 1,000 validation and 1,000 test questions, the rest in train"
    )
    use_original_splits = forms.BooleanField(
        required=False, label="Keep each item in the split of its source release (original splits)"
    )
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31 - 1)
    aggregation = forms.ChoiceField(
        choices=AGGREGATION_CHOICES,
        initial=DAWID_SKENE,
        required=False,  # a form posted without it (a script, an older page) gets the default
        widget=forms.RadioSelect,
        label="Stage-2 validation",
        help_text="SciQ questions whose stage-2 validators flag them (ungrammatical, false answer, "
        "unrelated, too specific) are left out by this verdict. Other pairs are not affected.",
    )
    formats = forms.MultipleChoiceField(
        choices=[(f, f) for f in FORMATS], initial=list(FORMATS), widget=forms.CheckboxSelectMultiple
    )
    privacy_allow = forms.CharField(
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Reviewed values the privacy check may let through",
        help_text="One per line, e.g. a department's public office e-mail.",
    )
    publish = forms.CharField(
        required=False,
        max_length=1000,
        label="Publish to S3 or the Hugging Face Hub",
        help_text="Optional s3://bucket/prefix (the release is uploaded to prefix/<name>-<version>/) or "
        "hf://OWNER/NAME (a Hub dataset repository, the version as a tag). "
        "Submit the same options again to publish a release written earlier.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["corpus"].choices = [("", "—")] + [
            (name, name) for name in Corpus.objects.order_by("name").values_list("name", flat=True)
        ]
        self.fields["batches"].choices = [
            (str(b.pk), f"#{b.pk} {b.name} ({b.get_kind_display()}, {b.corpus.name})")
            for b in Batch.objects.select_related("corpus").order_by("-pk")
        ]
        self.export_request: Optional[ExportRequest] = None

    def clean(self) -> dict[str, Any]:
        """Build the :class:`ExportRequest` and let the service check it; errors go to their fields."""
        data = super().clean()
        if self.errors:
            return data
        by_corpus = data["source"] == "corpus"
        request = ExportRequest(
            name=data["name"].strip(),
            version=data["version"].strip(),
            out_dir="",  # the CROWDQA_RELEASES_DIR of the worker that builds it
            corpus=(data.get("corpus") or None) if by_corpus else None,
            batches=() if by_corpus else tuple(int(b) for b in data.get("batches") or ()),
            ratios=(data["ratio_train"], data["ratio_val"], data["ratio_test"]),
            sciq_mode=data["sciq_mode"],
            use_original_splits=data["use_original_splits"],
            seed=data["seed"],
            formats=tuple(data["formats"]),
            privacy_allow=tuple(
                line.strip() for line in (data.get("privacy_allow") or "").splitlines() if line.strip()
            ),
            publish=(data.get("publish") or "").strip(),
            aggregation=data.get("aggregation") or DAWID_SKENE,
        )
        if by_corpus and not request.corpus:
            self.add_error("corpus", "Choose the corpus to export.")
            return data
        if not by_corpus and not request.batches:
            self.add_error("batches", "Choose at least one batch.")
            return data
        try:
            validate_request(request)
        except ExportRequestError as exc:
            self.add_error(ERROR_FIELDS.get(exc.field), str(exc))
            return data
        self.export_request = request
        return data
