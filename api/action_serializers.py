"""Bodies and rows of the API's later endpoints: workers, release and benchmark starts, webhooks.

As in :mod:`api.serializers`, bodies are typed here and the rules stay in the forms and services the
console uses (``ReleaseForm``, ``StartBenchmarkForm``, ``crowd.services.review``, ``EndpointForm``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from crowd.models import Worker
from exports.checks import PROBLEM_CODES
from webhooks.forms import SUBSCRIBABLE, clean_endpoint_url
from webhooks.models import Attempt, Delivery, Endpoint


class WorkerSerializer(serializers.ModelSerializer):
    """A worker by pseudonym (their platform id is never shown) with their block."""

    platform = serializers.CharField(
        read_only=True, help_text="The worker's platform (as a batch's provider)."
    )

    class Meta:
        model = Worker
        fields = ["id", "pseudonym", "platform", "is_expert", "blocked", "block_reason", "created"]
        read_only_fields = fields


class BlockSerializer(serializers.Serializer):
    """Why a worker is blocked (required) or unblocked (optional); kept with the worker."""

    reason = serializers.CharField(max_length=2000, allow_blank=True, default="")


class MessageSerializer(serializers.Serializer):
    """A message to one worker, sent on the platform of a batch they worked on."""

    batch = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    subject = serializers.CharField(max_length=200)
    message = serializers.CharField(max_length=10_000)


class ReleaseCreateSerializer(serializers.Serializer):
    """The New release page's fields as JSON (checked again by ``ReleaseForm``)."""

    name = serializers.CharField(max_length=100)
    version = serializers.CharField(max_length=50)
    source = serializers.ChoiceField(choices=["corpus", "batches"], default="corpus")
    corpus = serializers.CharField(max_length=100, required=False, allow_blank=True)
    batches = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=2**63 - 1), required=False, max_length=1000
    )
    ratio_train = serializers.FloatField(min_value=0, max_value=1, default=0.8)
    ratio_val = serializers.FloatField(min_value=0, max_value=1, default=0.1)
    ratio_test = serializers.FloatField(min_value=0, max_value=1, default=0.1)
    sciq_mode = serializers.BooleanField(default=False)
    use_original_splits = serializers.BooleanField(default=False)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    aggregation = serializers.CharField(max_length=50, required=False, allow_blank=True)
    formats = serializers.ListField(
        child=serializers.CharField(max_length=20), required=False, min_length=1, max_length=10
    )
    privacy_allow = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, max_length=200
    )
    publish = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    allow = serializers.ListField(
        child=serializers.ChoiceField(choices=list(PROBLEM_CODES)),
        required=False,
        help_text="Problems to let through (as 'Export anyway' after a refusal).",
    )

    def form_data(self) -> dict[str, Any]:
        """The body as the form's fields (booleans present only when true, as a browser sends them)."""
        data = dict(self.validated_data)
        data.pop("allow", None)
        data["privacy_allow"] = "\n".join(data.get("privacy_allow") or [])
        for flag in ("sciq_mode", "use_original_splits"):
            if not data.get(flag):
                data.pop(flag, None)
        if "formats" not in data:
            data.pop("formats", None)
        return data


class BenchmarkStartSerializer(serializers.Serializer):
    """A run on one release: the leaderboard page's form as JSON (checked by ``StartBenchmarkForm``)."""

    release = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    system = serializers.CharField(max_length=50)
    split = serializers.CharField(max_length=20, default="test")
    metrics = serializers.ListField(child=serializers.CharField(max_length=50), min_length=1, max_length=20)
    model = serializers.CharField(max_length=500, required=False, default="local")
    judge = serializers.CharField(max_length=50, default="none")
    limit = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False)


class EndpointSerializer(serializers.ModelSerializer):
    """A webhook endpoint; ``secret`` is shown to accounts that may manage endpoints.
    ``previous_secret_expires``: until when the secret before the last rotation still signs (a second
    ``v1``), or null."""

    events = serializers.ListField(
        child=serializers.ChoiceField(choices=[value for value, _ in SUBSCRIBABLE]),
        min_length=1,
        max_length=20,
    )
    secret = serializers.SerializerMethodField()

    class Meta:
        model = Endpoint
        fields = [
            "id",
            "url",
            "description",
            "events",
            "active",
            "secret",
            "previous_secret_expires",
            "created",
        ]
        read_only_fields = ["id", "secret", "previous_secret_expires", "created"]

    def validate_url(self, url: str) -> str:
        """The console form's rule: no private addresses (unless allowed), http(s), no credentials."""
        try:
            return clean_endpoint_url(url)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from exc

    def validate_events(self, events: list[str]) -> list[str]:
        return sorted(set(events))

    def get_secret(self, endpoint: Endpoint) -> str:
        return endpoint.secret if self.context.get("show_secret") else ""


class RotateSerializer(serializers.Serializer):
    """How long the old secret keeps signing after a rotation (at most 7 days, as Stripe allows)."""

    overlap_seconds = serializers.IntegerField(min_value=0, max_value=7 * 24 * 3600, required=False)


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = Attempt
        fields = ["number", "started_at", "duration_ms", "status_code", "error", "response_excerpt"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    """A delivery with its event and its attempt log (newest first)."""

    event_id = serializers.UUIDField(source="event.uid", read_only=True)
    event_type = serializers.CharField(source="event.type", read_only=True)
    data = serializers.JSONField(source="event.data", read_only=True)
    attempt_log = AttemptSerializer(many=True, read_only=True)

    class Meta:
        model = Delivery
        fields = [
            "id",
            "endpoint",
            "event_id",
            "event_type",
            "data",
            "status",
            "attempts",
            "next_attempt_at",
            "last_status_code",
            "last_error",
            "delivered_at",
            "created",
            "attempt_log",
        ]
        read_only_fields = fields


class CorpusStatusSerializer(serializers.Serializer):
    """What a corpus holds after its imports and filter runs, and the jobs that worked on it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    source = serializers.CharField()
    created = serializers.DateTimeField()
    documents = serializers.IntegerField()
    documents_by_split = serializers.DictField(child=serializers.IntegerField())
    passages = serializers.IntegerField()
    passages_by_filter_status = serializers.DictField(child=serializers.IntegerField())
    qa_pairs = serializers.IntegerField()
    qa_pairs_by_split = serializers.DictField(child=serializers.IntegerField())
    qa_pairs_by_type = serializers.DictField(child=serializers.IntegerField())
    jobs = serializers.ListField(child=serializers.DictField())
