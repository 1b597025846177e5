"""What the API reads and writes: the stored objects as JSON, and the bodies of its actions.

Bodies are checked here (types and ranges); the rules of each action (transitions, budget, who may be paid)
stay in the services the console calls, which the views use.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotation.hits import BuiltFrom, handler_for
from annotation.models import Assignment, Batch, Corpus, Job
from annotation.services.batches import default_time_limit
from crowd.providers.traits import accepted_rejection_categories
from evaluation.models import BenchmarkRun
from exports.models import Release

#: The largest id a database stores (a signed 64-bit integer): larger ones are 400s, not overflows.
MAX_ID = 2**63 - 1


class CorpusSerializer(serializers.ModelSerializer):
    """A corpus with how many documents and passages it holds."""

    documents = serializers.IntegerField(source="n_documents", read_only=True)
    passages = serializers.IntegerField(source="n_passages", read_only=True)

    class Meta:
        model = Corpus
        fields = [
            "id",
            "name",
            "kind",
            "description",
            "source",
            "license",
            "created",
            "documents",
            "passages",
        ]


class BatchSerializer(serializers.ModelSerializer):
    """A batch as listed: its settings and status (amounts in hundredths of ``currency``)."""

    corpus = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Batch
        fields = [
            "id",
            "name",
            "kind",
            "provider",
            "corpus",
            "parent",
            "status",
            "title",
            "reward_cents",
            "assignments_per_hit",
            "time_limit_minutes",
            "budget_cap_cents",
            "currency",
            "created",
            "published_at",
            "closed_at",
        ]
        read_only_fields = fields


class EstimateSerializer(serializers.Serializer):
    """The cost estimate the New batch page shows, in hundredths of ``currency``."""

    hits = serializers.IntegerField()
    currency = serializers.CharField()
    assignments = serializers.IntegerField()
    rewards_cents = serializers.IntegerField()
    bonuses_cents = serializers.IntegerField()
    fees_cents = serializers.IntegerField()
    total_cents = serializers.IntegerField()


class ConfirmableEstimateSerializer(EstimateSerializer):
    """The estimate of a body sent to ``estimate/``, with what publishing that body needs.

    ``estimated`` is a digest of exactly these values: ``POST /batches/`` with ``"publish": true`` and this
    ``estimated`` publishes them (as the New batch page's Publish button does on the page that showed the
    estimate); with any value changed the digest no longer matches and the estimate is shown again.
    """

    estimated = serializers.CharField()
    note = serializers.CharField(allow_blank=True)


class EstimateFirstSerializer(serializers.Serializer):
    """409: publishing needs the estimate of exactly these values first; here it is."""

    detail = serializers.CharField()
    estimate = ConfirmableEstimateSerializer()


class CostSerializer(serializers.Serializer):
    """What a batch cost so far (``crowd.services.budget.spent_cents``), in hundredths of its currency."""

    rewards = serializers.IntegerField()
    bonuses = serializers.IntegerField()
    fees = serializers.IntegerField()
    committed = serializers.IntegerField()
    total = serializers.IntegerField()


class ProgressSerializer(serializers.Serializer):
    """Assignments by state and HITs done, as on the batch page's live progress."""

    places_total = serializers.IntegerField()
    states = serializers.DictField(child=serializers.IntegerField())
    hits_total = serializers.IntegerField()
    hits_completed = serializers.IntegerField()


class BatchDetailSerializer(BatchSerializer):
    """One batch with its progress, its cost so far and its estimate."""

    progress = ProgressSerializer(read_only=True)
    cost = CostSerializer(read_only=True)
    estimate = EstimateSerializer(read_only=True)

    class Meta(BatchSerializer.Meta):
        fields = [*BatchSerializer.Meta.fields, "progress", "cost", "estimate"]
        read_only_fields = fields


class BatchCreateSerializer(serializers.Serializer):
    """The New batch form's fields as JSON; they are checked again by the form itself (``NewBatchForm``)."""

    kind = serializers.CharField(max_length=40)
    provider = serializers.CharField(max_length=40, required=False)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    corpus = serializers.CharField(max_length=100, required=False, allow_blank=True)
    documents = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=500
    )
    parent = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100000)
    assignments = serializers.IntegerField(required=False, min_value=1, max_value=100)
    reward = serializers.DecimalField(
        max_digits=8,
        decimal_places=2,
        min_value=0,
        max_value=100000,
        required=False,
        help_text="Required, except for expert batches (nothing is paid).",
    )
    time_limit = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60)
    expected_minutes = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60)
    budget = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=0, max_value=100000, required=False
    )
    auto_approve_hours = serializers.IntegerField(required=False, min_value=1, max_value=720)
    max_pairs_per_worker = serializers.IntegerField(required=False, min_value=1, max_value=100000)
    max_pairs_per_document = serializers.IntegerField(required=False, min_value=1, max_value=100000)
    quiz = serializers.IntegerField(required=False, min_value=0, max_value=100)
    require_qualification = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    exclude_batches = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), required=False, max_length=500
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    description = serializers.CharField(max_length=10000, required=False, allow_blank=True)
    release = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="Expert batches: the release's id."
    )
    split = serializers.CharField(max_length=10, required=False, help_text="Expert batches (default test).")
    sample = serializers.IntegerField(
        required=False, min_value=1, max_value=100000, help_text="Expert batches: questions sampled."
    )
    publish = serializers.BooleanField(
        default=False,
        help_text="Publish at once (expert batches: open at once); needs ``estimated`` from ``estimate/``.",
    )
    estimated = serializers.CharField(
        max_length=64, required=False, help_text="The ``estimated`` of the estimate of these same values."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = attrs.get("kind")
        expert = kind in Batch.Kind.values and handler_for(kind).built_from == BuiltFrom.RELEASE
        if "reward" not in attrs:
            if not expert:
                raise serializers.ValidationError({"reward": ["This field is required."]})
            attrs["reward"] = 0
        return attrs

    def form_data(self) -> dict[str, Any]:
        """The validated body as the New batch form's fields (lists stay lists for ``QueryDict.setlist``)."""
        data = {k: v for k, v in self.validated_data.items() if k not in ("publish", "estimated")}
        if "documents" in data:
            data["documents"] = "\n".join(data["documents"])
        data.setdefault("provider", "local")
        if "time_limit" not in data and data["kind"] in Batch.Kind.values:
            data["time_limit"] = default_time_limit(data["kind"])
        data.setdefault("assignments", 1)
        return data


class AssignmentSerializer(serializers.ModelSerializer):
    """A worker's assignment: which batch and HIT, whose (pseudonym), its state and times."""

    batch = serializers.IntegerField(source="hit.batch_id", read_only=True)
    hit = serializers.IntegerField(source="hit_id", read_only=True)
    worker = serializers.CharField(source="worker.pseudonym", read_only=True)

    class Meta:
        model = Assignment
        fields = [
            "id",
            "batch",
            "hit",
            "worker",
            "status",
            "answers",
            "accepted_at",
            "submitted_at",
            "reviewed_at",
            "time_on_task_seconds",
        ]
        read_only_fields = fields


class ApproveSerializer(serializers.Serializer):
    """Approve a submission; ``confirm_no_work`` as on the review page (approving work not on file)."""

    feedback = serializers.CharField(max_length=10000, required=False, allow_blank=True, default="")
    confirm_no_work = serializers.BooleanField(required=False, default=False)


class RejectSerializer(serializers.Serializer):
    """Reject a submission with the reason the worker reads and a category."""

    reason = serializers.CharField(max_length=10000)
    category = serializers.ChoiceField(
        choices=sorted(accepted_rejection_categories()), required=False, default="OTHER"
    )


class BonusSerializer(serializers.Serializer):
    """A bonus in hundredths of the batch's currency, paid once per reason (the ledger's key)."""

    cents = serializers.IntegerField(min_value=1, max_value=10_000_000)
    reason = serializers.CharField(max_length=10000)
    confirm_no_work = serializers.BooleanField(required=False, default=False)


class OutcomeSerializer(serializers.Serializer):
    """The answer to an action: the object's new state and the platform's answer in words."""

    id = serializers.IntegerField()
    status = serializers.CharField()
    detail = serializers.CharField()


class JobSerializer(serializers.ModelSerializer):
    """A long-running job's status, progress, result and error."""

    class Meta:
        model = Job
        fields = [
            "id",
            "kind",
            "status",
            "progress_done",
            "progress_total",
            "result",
            "error",
            "queue",
            "created",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class ReleaseSerializer(serializers.ModelSerializer):
    """A registered release: name, version, split counts and where it was published."""

    class Meta:
        model = Release
        fields = [
            "id",
            "name",
            "version",
            "kind",
            "counts",
            "seed",
            "ratios",
            "source",
            "manifest_sha256",
            "created",
            "published_url",
        ]
        read_only_fields = fields


class ReleaseFileSerializer(serializers.Serializer):
    """One file the release's manifest lists, with its checksum and data rows."""

    path = serializers.CharField()
    sha256 = serializers.CharField()
    rows = serializers.IntegerField(allow_null=True)


class BenchmarkRunSerializer(serializers.ModelSerializer):
    """A benchmark run of a release split: its system, status and overall metrics."""

    class Meta:
        model = BenchmarkRun
        fields = [
            "id",
            "release",
            "split",
            "system",
            "model_name",
            "status",
            "progress",
            "n_items",
            "metrics",
            "error",
        ]
        read_only_fields = fields


class BenchmarkResultSerializer(BenchmarkRunSerializer):
    """A run with its metrics by stratum (question type, answerability) and its timings."""

    class Meta(BenchmarkRunSerializer.Meta):
        fields = [*BenchmarkRunSerializer.Meta.fields, "params", "stratified", "timings"]
        read_only_fields = fields
