"""Webhook endpoints, the events crowdqa sends them, and each delivery with its attempts.

An event is stored once per ``key`` (say ``submission.received:42``), however often the code that emits it
runs, and gets one :class:`Delivery` per endpoint that subscribes to its type; the delivery job sends it
with the event's ``uid`` (the ``Crowdqa-Event-Id`` header), so a receiver that sees an id twice (a retry
after a lost reply, a replay) can ignore the second copy.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from webhooks.signing import new_secret


class EventType(models.TextChoices):
    """What an endpoint can subscribe to (the payload of each is in docs/webhooks.md)."""

    SUBMISSION_RECEIVED = "submission.received", "A worker's submission was received"
    ASSIGNMENT_APPROVED = "assignment.approved", "A submission was approved"
    ASSIGNMENT_REJECTED = "assignment.rejected", "A submission was rejected"
    BATCH_COMPLETED = "batch.completed", "A batch's HITs are all done, or it was closed"
    BUDGET_REACHED = "budget.reached", "A batch reached its budget cap (stopped, or a payment refused)"
    RELEASE_BUILT = "release.built", "A release was built"
    BENCHMARK_FINISHED = "benchmark.finished", "A benchmark run finished (done or failed)"
    PING = "ping", "A test event sent from the console"


class Endpoint(models.Model):
    """A URL that receives signed POSTs for the event types it lists."""

    url = models.URLField(max_length=500)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, help_text="Event types this endpoint receives.")
    secret = models.CharField(max_length=100, default=new_secret)
    previous_secret = models.CharField(
        max_length=100, blank=True, help_text="The secret before the last rotation (signs until it expires)."
    )
    previous_secret_expires = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"Endpoint({self.pk}) {self.url}"

    def wants(self, event_type: str) -> bool:
        """Whether this endpoint receives ``event_type`` (``ping`` goes only where it is sent)."""
        return self.active and event_type in (self.events or [])

    def rotate_secret(self, overlap_seconds: float | None = None) -> None:
        """Give the endpoint a new secret, keeping the old one signing too for an overlap window.

        During the window (``WEBHOOK_SECRET_OVERLAP_SECONDS`` unless given; 0 ends the old secret at
        once) every delivery carries two ``v1`` signatures, one per secret, as Stripe does when a secret
        is rolled: a receiver still holding the old secret keeps accepting deliveries while it is updated.
        Rotating again inside the window ends the first old secret: only the last one overlaps.
        """
        default = settings.WEBHOOK_SECRET_OVERLAP_SECONDS
        overlap = float(default if overlap_seconds is None else overlap_seconds)
        if overlap > 0:
            self.previous_secret = self.secret
            self.previous_secret_expires = timezone.now() + timedelta(seconds=overlap)
        else:
            self.previous_secret, self.previous_secret_expires = "", None
        self.secret = new_secret()
        self.save(update_fields=["secret", "previous_secret", "previous_secret_expires"])

    rotate_secret.alters_data = True  # type: ignore[attr-defined]

    def overlapping_secret(self) -> str:
        """The previous secret while its overlap window lasts, else ``""``."""
        expires = self.previous_secret_expires
        return self.previous_secret if expires is not None and expires > timezone.now() else ""

    def signing_secrets(self) -> list[str]:
        """The secrets a delivery sent now is signed with: the current one, then the overlapping one."""
        return [self.secret, *filter(None, [self.overlapping_secret()])]


class Event(models.Model):
    """Something that happened, stored once per ``key``, with the JSON sent as its ``data``."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    key = models.CharField(max_length=200, unique=True)
    type = models.CharField(max_length=50, choices=EventType.choices, db_index=True)
    data = models.JSONField(default=dict)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"Event({self.pk}) {self.type} {self.key}"

    def body(self) -> bytes:
        """The delivery body: the same bytes on every attempt, so a signature covers exactly them."""
        document = {
            "id": str(self.uid),
            "type": self.type,
            "created": self.created.isoformat(),
            "data": self.data,
        }
        return json.dumps(document, sort_keys=True, separators=(",", ":")).encode("utf-8")


class DeliveryQuerySet(models.QuerySet["Delivery"]):
    def overdue(self, grace: timedelta) -> DeliveryQuerySet:
        """Pending deliveries whose next attempt is ``grace`` late and that no job holds (a lost job)."""
        now = timezone.now()
        return self.filter(status=Delivery.Status.PENDING, next_attempt_at__lte=now - grace).exclude(
            claimed_until__gt=now
        )


class Delivery(models.Model):
    """One event for one endpoint: its state, the next attempt and the outcome of the last one."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True, default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        ordering = ["-pk"]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event"], name="webhooks_one_delivery_per_endpoint")
        ]

    def __str__(self) -> str:
        return f"Delivery({self.pk}) {self.status}"

    def replay(self) -> None:
        """Send again from the first attempt's budget (a researcher's replay from the console or API)."""
        self.status = self.Status.PENDING
        self.attempts = 0
        self.next_attempt_at = timezone.now()
        self.claimed_until = None
        self.save(update_fields=["status", "attempts", "next_attempt_at", "claimed_until"])

    replay.alters_data = True  # type: ignore[attr-defined]


class Attempt(models.Model):
    """One POST of a delivery: when, how long, the answer's status or the error, and the answer's start."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    response_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["-pk"]

    def __str__(self) -> str:
        return f"Attempt({self.pk}) of Delivery({self.delivery_id}) -> {self.status_code or self.error[:40]}"

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
