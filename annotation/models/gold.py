"""Gold and attention items served inside a batch, each worker's answers to them, and their standing.

An item is an ordinary QA pair (in a corpus of its own, so it never enters a release) that a HIT of the
batch shows exactly like a real question: the HIT row and the page say nothing of it. Only these rows
know which HITs are items and what a right answer is. Grading and the warn/block decision are
:mod:`crowd.gold` (pure) and :mod:`crowd.services.gold`.
"""

from __future__ import annotations

from django.db import models

from annotation.models.answers import QAPair
from annotation.models.work import HIT, Assignment, Batch


class GoldItemQuerySet(models.QuerySet["GoldItem"]):
    """Queries over a batch's items."""

    def unserved(self) -> GoldItemQuerySet:
        """Items attached to the batch that no HIT shows yet."""
        return self.filter(hit__isnull=True)


class GoldItem(models.Model):
    """A question with a known right answer (gold) or an instructed response (attention) of a batch."""

    class Kind(models.TextChoices):
        GOLD = "gold", "Gold (known verdict)"
        ATTENTION = "attention", "Attention (instructed response)"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="gold_items")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    qa_pair = models.OneToOneField(QAPair, on_delete=models.PROTECT, related_name="gold_item")
    hit = models.OneToOneField(
        HIT,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="gold_item",
        help_text="The HIT that serves it; empty until the batch has enough real HITs to hide it among.",
    )
    expected = models.JSONField(
        help_text='{"label": "accept"|"reject"} (gold) or {"flags": [...]} (attention).'
    )
    source = models.CharField(
        max_length=300, blank=True, help_text="e.g. sciq:valid-17 or file:gold.jsonl line 3"
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = GoldItemQuerySet.as_manager()

    class Meta:
        ordering = ["batch", "pk"]

    def __str__(self) -> str:
        return f"GoldItem({self.pk}) {self.kind} of Batch({self.batch_id})"


class GoldAnswer(models.Model):
    """One worker's submitted answer to one item, graded once by the after-submission job."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="gold_answer")
    item = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="answers")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="gold_answers")
    passed = models.BooleanField()
    given = models.CharField(max_length=200, blank=True, help_text="What the worker answered, in words.")
    graded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"GoldAnswer({self.pk}) {'passed' if self.passed else 'failed'}"


class GoldStanding(models.Model):
    """A worker's record on one batch's items and what the batch's thresholds made of it."""

    class State(models.TextChoices):
        OK = "ok", "OK"
        WARNED = "warned", "Warned"
        BLOCKED = "blocked", "Blocked"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="gold_standings")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.CASCADE, related_name="gold_standings")
    gold_n = models.PositiveIntegerField(default=0)
    gold_correct = models.PositiveIntegerField(default=0)
    attention_n = models.PositiveIntegerField(default=0)
    attention_failed = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=20, choices=State.choices, default=State.OK)
    reason = models.TextField(blank=True)
    block_error = models.TextField(
        blank=True, help_text="Why the platform refused the block (the local block stands)."
    )
    failures_at_block = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Wrong gold answers plus failed attention items when the standing last blocked the "
        "worker: after a researcher unblocks them, only a failure beyond these blocks again.",
    )
    warning_sent_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the worker was sent the warning message (once per batch; set before sending).",
    )
    warning_error = models.TextField(blank=True, help_text="Why the warning message could not be sent.")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["batch", "worker"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "worker"], name="goldstanding_one_per_worker"),
        ]

    def __str__(self) -> str:
        return f"GoldStanding({self.pk}) {self.state} of Worker({self.worker_id}) on Batch({self.batch_id})"

    @property
    def gold_accuracy(self) -> float | None:
        """Share of gold answers that were right (None before the first)."""
        return self.gold_correct / self.gold_n if self.gold_n else None
