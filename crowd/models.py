"""Crowd workers, their qualifications, and the payment ledger.

Platform worker ids are personal data: they stay in this app. Everything that leaves the platform
(exports, the review UI's statistics) uses :attr:`Worker.pseudonym`, a salted HMAC that is stable
across batches so a worker's contributions can still be grouped.
"""

from __future__ import annotations

from typing import Optional

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

import annotation.models
from crowd.pseudonyms import pseudonymize_worker


def pseudonym_for(platform: str, platform_id: str, salt: Optional[str] = None) -> str:
    """Return the stable salted pseudonym of a platform worker id.

    Args:
        platform: ``local``, ``mturk`` or ``prolific``.
        platform_id: the platform's own id of the worker.
        salt: defaults to ``settings.CROWDQA_PSEUDONYM_SALT``; changing it changes every pseudonym.

    The pseudonym is the one releases carry (:func:`crowd.pseudonyms.pseudonymize_worker`), so the
    release privacy check recognises it.
    """
    return pseudonymize_worker(
        platform_id, salt if salt is not None else settings.CROWDQA_PSEUDONYM_SALT, platform=platform
    )


def platform_choices() -> list[tuple[str, str]]:
    """The registered platforms (``annotation.models.Platform``), read when a form or the admin asks:
    ``Worker.platform``'s choices follow the platform packages without a migration."""
    return annotation.models.Platform.choices()


class WorkerManager(models.Manager["Worker"]):
    """Creation logic for workers: one row per (platform, platform id), pseudonym always set."""

    def get_or_create_for(self, platform: str, platform_id: str, **defaults: object) -> Worker:
        """Return the worker with this platform id, creating it (race-safe) on first sight."""
        with transaction.atomic():
            worker, _ = self.get_or_create(
                platform=platform,
                platform_id=platform_id,
                defaults={"pseudonym": pseudonym_for(platform, platform_id), **defaults},
            )
        return worker


class Worker(models.Model):
    """A person who does HITs: an MTurk or Prolific worker, or a local account (in-lab, expert)."""

    platform = models.CharField(max_length=20, choices=platform_choices)
    platform_id = models.CharField(max_length=100)
    pseudonym = models.CharField(max_length=32, unique=True, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="worker"
    )
    is_expert = models.BooleanField(default=False)
    blocked = models.BooleanField(default=False)
    block_reason = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    objects = WorkerManager()

    class Meta:
        ordering = ["platform", "pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["platform", "platform_id"], name="worker_unique_platform_id"),
        ]

    def __str__(self) -> str:
        return f"Worker({self.pk}) {self.pseudonym}"


class QualificationQuerySet(models.QuerySet["Qualification"]):
    """Queries over qualification grants."""

    def pending_on_platform(self) -> QualificationQuerySet:
        """Grants the platform has not confirmed yet (a failed MTurk / Prolific call): sync retries them."""
        return self.filter(platform_synced=False).exclude(platform_qualification_id="")


class Qualification(models.Model):
    """A qualification a worker holds, e.g. having passed screening (mirrors MTurk / Prolific groups).

    The local row is the record of the grant; ``platform_qualification_id`` names what must also exist on
    the platform (MTurk qualification type, Prolific allow-list group). ``platform_synced`` stays False
    until the platform accepted it, so a grant that failed there is retried by sync rather than lost.
    """

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    name = models.SlugField(max_length=100)
    value = models.IntegerField(default=1)
    granted_at = models.DateTimeField(default=timezone.now)
    platform_synced = models.BooleanField(default=False)
    batch = models.ForeignKey(
        "annotation.Batch",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="qualification_grants",
        help_text="The screening batch whose approval granted it (its platform and provider settings).",
    )
    platform_qualification_id = models.CharField(
        max_length=200,
        blank=True,
        help_text="Its id on the platform (a qualification type, a participant group); empty: local only.",
    )
    platform_attempts = models.PositiveIntegerField(default=0)
    platform_error = models.TextField(
        blank=True, help_text="The platform's answer to the last failed attempt."
    )

    objects = QualificationQuerySet.as_manager()

    class Meta:
        ordering = ["worker", "name"]
        constraints = [models.UniqueConstraint(fields=["worker", "name"], name="qualification_unique")]

    def __str__(self) -> str:
        return f"{self.name}={self.value} for Worker({self.worker_id})"


class Payment(models.Model):
    """One reward or bonus in the ledger.

    ``idempotency_key`` is unique, and the key is also sent to the platform where it supports one
    (MTurk's ``UniqueRequestToken``). A payment row is written before the platform is called and updated
    after, so a crash between the two is visible and the retry reuses the same key: a payment is never
    sent twice.
    """

    class Kind(models.TextChoices):
        REWARD = "reward", "Reward"
        BONUS = "bonus", "Bonus"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending (not yet sent)"
        SENT = "sent", "Unknown: sent, no answer yet (settled from the platform's record)"
        CONFIRMED = "confirmed", "Confirmed by the platform"
        FAILED = "failed", "Failed: not paid"

    batch = models.ForeignKey("annotation.Batch", on_delete=models.PROTECT, related_name="payments")
    assignment = models.ForeignKey(
        "annotation.Assignment", on_delete=models.PROTECT, null=True, blank=True, related_name="payments"
    )
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="payments")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    amount_cents = models.PositiveIntegerField()
    currency = models.CharField(max_length=3, default="USD")
    reason = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=64, unique=True)
    platform_ref = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    error = models.TextField(blank=True)
    setups_in_doubt = models.PositiveIntegerField(
        default=0,
        help_text="Bonus set-ups sent for this payment whose answer never came, on a platform that sets a "
        "bonus up before paying it: they may exist there unpaid (they pay nothing; the platform's API can "
        "neither list nor cancel them).",
    )
    created = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment"],
                condition=models.Q(kind="reward"),
                name="payment_one_reward_per_assignment",
            ),
        ]

    def __str__(self) -> str:
        return f"Payment({self.pk}) {self.kind} {self.amount_cents}c {self.status}"


class PaymentClaim(models.Model):
    """Who is paying one idempotency key right now: serialises concurrent payments of the same key.

    A row lock cannot be held across the platform call, because the ledger's write-ahead ``Payment`` rows
    must be committed before that call (``crowd.services.ledger``). This row is a lease instead: the one
    caller whose insert wins (unique key) pays, the others wait until it is deleted; a lease whose
    holder died is taken over once ``expires_at`` has passed (at once on PostgreSQL, where the holder's
    session advisory lock ends with its connection), and the ledger rows tell the new holder what was
    already sent.
    """

    idempotency_key = models.CharField(max_length=64, unique=True)
    owner = models.CharField(max_length=64)
    acquired_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["acquired_at"]

    def __str__(self) -> str:
        return f"PaymentClaim({self.idempotency_key}) until {self.expires_at.isoformat()}"


class InviteQuerySet(models.QuerySet["Invite"]):
    """Queries over invite links."""

    def usable(self) -> InviteQuerySet:
        """Invites nobody has used yet and that have not expired."""
        return self.filter(used_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=timezone.now())
        )


class Invite(models.Model):
    """A one-time login link for a local-crowd worker (an in-lab annotator or an expert).

    Only the SHA-256 of the token is stored: the link itself is shown once, to the researcher who
    created it, so a database dump cannot be used to log in as a worker.
    """

    token_sha256 = models.CharField(max_length=64, unique=True, editable=False)
    batch = models.ForeignKey(
        "annotation.Batch", on_delete=models.CASCADE, null=True, blank=True, related_name="invites"
    )
    label = models.CharField(max_length=200, blank=True, help_text="Who the link is for (researcher's note).")
    is_expert = models.BooleanField(default=False)
    worker = models.ForeignKey(
        Worker,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="invites",
        help_text="The worker account created when the link was used.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    used_at = models.DateTimeField(null=True, blank=True)

    objects = InviteQuerySet.as_manager()

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Invite({self.pk}) {'used' if self.used_at else 'open'}"


class Consent(models.Model):
    """A worker's informed consent for one batch, given on the first HIT of that batch."""

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="consents")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="consents")
    given_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-given_at"]
        constraints = [models.UniqueConstraint(fields=["worker", "batch"], name="consent_unique")]

    def __str__(self) -> str:
        return f"Consent of Worker({self.worker_id}) for Batch({self.batch_id})"


class WebhookEvent(models.Model):
    """A platform webhook event already handled: the unique key drops redeliveries."""

    provider = models.CharField(max_length=20)
    event_id = models.CharField(max_length=200)
    received_at = models.DateTimeField(auto_now_add=True)
    payload = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-received_at"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "event_id"], name="webhook_event_unique"),
        ]

    def __str__(self) -> str:
        return f"WebhookEvent({self.provider}:{self.event_id})"


class BatchPlatformState(models.Model):
    """What crowdqa remembers of a batch's life on its platform (not a launch setting: ``Batch.options``).

    One row per batch that went to a platform; later platform calls rebuild the ``PublishedBatch`` from
    ``published``. ``publish_started`` marks a publish that has not finished (the next attempt resumes it)
    and ``publish_ref`` the HIT type or study it created; ``stopped_for_good`` a batch whose units the
    platform expired for good (``stop_is_final``); ``screening_qualification`` the platform qualification
    created for a screening batch (MTurk qualification type, Prolific participant group);
    ``attention_reason`` why sync stopped on the batch (its units are gone); ``budget_stopped_at`` when
    the batch was stopped for reaching its budget cap. ``sync_cursor`` is where an
    unfinished sync pass stopped (the next run goes on from there), ``sync_from`` where the next pass
    starts on a platform whose list only grows at its end (Prolific: the first page holding work that
    can still change), ``full_synced_at`` when a pass last read the whole list
    (:mod:`crowd.services.sync_pass`). The code a participant returns with is the one the batch was
    published with (``completion_code``, read from ``published``).
    """

    batch = models.OneToOneField(
        "annotation.Batch", on_delete=models.CASCADE, primary_key=True, related_name="platform_state"
    )
    published = models.JSONField(null=True, blank=True, help_text="crowd.providers.base.PublishedBatch")
    publish_started = models.DateTimeField(null=True, blank=True)
    publish_ref = models.CharField(max_length=100, blank=True, default="")
    stopped_for_good = models.BooleanField(default=False)
    screening_qualification = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="The platform qualification a screening batch grants.",
    )
    attention_reason = models.TextField(blank=True, default="")
    attention_at = models.DateTimeField(null=True, blank=True)
    sync_cursor = models.JSONField(null=True, blank=True, help_text="Where an unfinished sync pass stopped.")
    sync_from = models.JSONField(null=True, blank=True, help_text="Where the next sync pass starts.")
    synced_at = models.DateTimeField(null=True, blank=True)
    full_synced_at = models.DateTimeField(null=True, blank=True)
    budget_stopped_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"BatchPlatformState(Batch({self.batch_id}))"

    @property
    def completion_code(self) -> str:
        """The code the platform published the batch with (a Prolific study's); "" before or elsewhere."""
        return str((self.published or {}).get("completion_code") or "")

    @classmethod
    def of(cls, batch_id: int) -> BatchPlatformState:
        """The batch's state as stored (an unsaved empty one when the batch has none yet)."""
        return cls.objects.filter(batch_id=batch_id).first() or cls(batch_id=batch_id)

    @classmethod
    def change(cls, batch_id: int, **values: object) -> BatchPlatformState:
        """Write ``values`` to the batch's state under its row lock (created on first write)."""
        with transaction.atomic():
            state, _ = cls.objects.select_for_update().get_or_create(batch_id=batch_id)
            for name, value in values.items():
                setattr(state, name, value)
            state.save()
        return state


class WorkerMessage(models.Model):
    """A researcher's message to a local-crowd worker, read on the worker's own home page.

    External platforms deliver messages themselves (MTurk's NotifyWorkers, Prolific's messages); a local
    worker has no inbox anywhere else, so the local provider keeps the message here.
    """

    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="messages")
    batch = models.ForeignKey(
        "annotation.Batch", on_delete=models.SET_NULL, null=True, blank=True, related_name="worker_messages"
    )
    subject = models.CharField(max_length=200)
    body = models.TextField()
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"WorkerMessage({self.pk}) to {self.worker.pseudonym}: {self.subject}"
