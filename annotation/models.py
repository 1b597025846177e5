"""The annotation domain: corpora, documents, passages, batches, HITs, assignments and what workers write.

Data flows one way (docs/design.md): import -> filter -> HITs -> assignments -> QA pairs -> QC -> review ->
release -> evaluation. State changes are named methods (``assignment.submit()``) that check the
transition and raise :class:`IllegalTransition`; ``save()`` never hides side effects.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Optional

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation import question_types as qt
from annotation.active_time import merge_report
from annotation.batch_options import check_batch_options
from annotation.drafts import merge_draft
from annotation.platforms import Platform


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a text's UTF-8 bytes (used to detect unchanged re-imports)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class IllegalTransition(Exception):
    """Raised when a state change is not allowed from the object's current status."""

    def __init__(self, obj: models.Model, current: str, target: str) -> None:
        super().__init__(f"{type(obj).__name__}({obj.pk}) cannot go from '{current}' to '{target}'")
        self.current = current
        self.target = target


class Corpus(models.Model):
    """A named collection of documents and passages (one per imported dataset by default)."""

    class Kind(models.TextChoices):
        SYLLABUS = "syllabus", "Syllabi"
        TEXTBOOK = "textbook", "Textbook passages"
        EXAM = "exam", "Exam questions"
        GENERIC = "generic", "Documents"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.GENERIC)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=500, blank=True, help_text="Where the data came from.")
    license = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class Document(models.Model):
    """One source document (a syllabus, a textbook chapter) with clean UTF-8 text and page offsets.

    ``page_starts[i]`` is the character offset in ``text`` where page ``i + 1`` begins, so an answer
    span located by character offsets can be shown on its PDF page.
    """

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=300)
    title = models.CharField(max_length=500, blank=True)
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64, editable=False)
    pdf = models.FileField(upload_to="pdfs/", blank=True)
    page_starts = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    original_split = models.CharField(max_length=10, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["corpus", "name"]
        constraints = [models.UniqueConstraint(fields=["corpus", "name"], name="document_unique_name")]

    def __str__(self) -> str:
        return f"{self.corpus.name}/{self.name}"

    @property
    def num_pages(self) -> int:
        """Number of pages (1 for a document without page information)."""
        return max(1, len(self.page_starts))

    def page_of(self, offset: int) -> int:
        """Return the 1-based page holding character ``offset``."""
        if not self.page_starts:
            return 1
        return max(1, bisect.bisect_right(self.page_starts, offset))

    def page_bounds(self, page: int) -> tuple[int, int]:
        """Return the [start, end) character range of a 1-based page.

        Raises:
            ValueError: when the page does not exist.
        """
        if page < 1 or page > self.num_pages:
            raise ValueError(f"Document({self.pk}) has no page {page} (it has {self.num_pages})")
        starts = self.page_starts or [0]
        end = starts[page] if page < len(starts) else len(self.text)
        return starts[page - 1], end

    def page_text(self, page: int) -> str:
        """Text of one 1-based page."""
        start, end = self.page_bounds(page)
        return self.text[start:end]


MAX_CROWD_REJECTIONS = 2
"""A passage that two stage-1 workers rejected (each among three) is not offered again."""


class PassageQuerySet(models.QuerySet):
    """Queries over passages that views, tasks and HIT creation share."""

    def accepted(self) -> PassageQuerySet:
        return self.filter(filter_status=Passage.FilterStatus.ACCEPTED)

    def unused(self) -> PassageQuerySet:
        """Passages nobody has written a question about and no open HIT is showing as chosen."""
        return self.filter(used_by__isnull=True)

    def not_retired(self) -> PassageQuerySet:
        """Passages fewer than :data:`MAX_CROWD_REJECTIONS` stage-1 workers found unsuitable."""
        return self.filter(crowd_rejections__lt=MAX_CROWD_REJECTIONS)


class Passage(models.Model):
    """A paragraph of a corpus with the sentence filter's verdict and the rule codes behind it."""

    class FilterStatus(models.TextChoices):
        PENDING = "pending", "Not filtered yet"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="passages")
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="passages", null=True, blank=True
    )
    position = models.PositiveIntegerField(default=0, help_text="Order within the document or corpus.")
    text = models.TextField()
    text_sha256 = models.CharField(max_length=64, db_index=True, editable=False)
    start = models.PositiveIntegerField(null=True, blank=True, help_text="Offset in the document text.")
    filter_status = models.CharField(
        max_length=10, choices=FilterStatus.choices, default=FilterStatus.PENDING, db_index=True
    )
    filter_reasons = models.JSONField(default=list, blank=True)
    filtered_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        "QAPair",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The QA pair written about this passage; a used passage is never offered again.",
    )
    crowd_rejections = models.PositiveSmallIntegerField(
        default=0, help_text="How many SciQ stage-1 workers rejected this passage (with its two companions)."
    )

    objects = PassageQuerySet.as_manager()

    class Meta:
        ordering = ["corpus", "document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["corpus", "text_sha256"], name="passage_unique_text"),
        ]
        indexes = [models.Index(fields=["corpus", "filter_status"], name="passage_corpus_status")]

    def __str__(self) -> str:
        return f"Passage({self.pk}) {self.text[:60]}"


class Batch(models.Model):
    """A unit of crowd work a researcher launches: HITs of one kind on one provider."""

    class Kind(models.TextChoices):
        SYLLABUS_QA = "syllabus_qa", "Syllabus QA writing"
        SCIQ_QUESTION = "sciq_question", "SciQ question writing"
        SCIQ_DISTRACTOR = "sciq_distractor", "SciQ validation and distractors"
        SCREENING = "screening", "Screening"
        EXPERT_ANSWER = "expert_answer", "Expert answers (agreement)"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"
        PAUSED = "paused", "Paused"
        COMPLETED = "completed", "Completed"
        CANCELLED = "cancelled", "Cancelled"

    TRANSITIONS: dict[str, tuple[str, ...]] = {
        Status.DRAFT: (Status.PUBLISHED, Status.CANCELLED),
        Status.PUBLISHED: (Status.PAUSED, Status.COMPLETED, Status.CANCELLED),
        Status.PAUSED: (Status.PUBLISHED, Status.COMPLETED, Status.CANCELLED),
        Status.COMPLETED: (),
        Status.CANCELLED: (),
    }

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    provider = models.CharField(max_length=20, choices=Platform.choices(), default=Platform.LOCAL.value)
    corpus = models.ForeignKey(Corpus, on_delete=models.PROTECT, related_name="batches")
    parent = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="children",
        help_text="For stage-2 batches: the stage-1 batch whose questions they validate.",
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True)
    title = models.CharField(max_length=200, blank=True, help_text="Shown to workers on the platform.")
    description = models.TextField(blank=True)
    reward_cents = models.PositiveIntegerField(default=0)
    assignments_per_hit = models.PositiveSmallIntegerField(default=1)
    time_limit_minutes = models.PositiveIntegerField(default=60)
    max_pairs_per_worker_per_document = models.PositiveIntegerField(null=True, blank=True)
    max_pairs_per_worker = models.PositiveIntegerField(null=True, blank=True)
    budget_cap_cents = models.PositiveIntegerField(null=True, blank=True)
    # ISO 4217 code of every amount of this batch: the platform account's currency when it was created
    # (MTurk: USD; Prolific: the workspace's currency).
    currency = models.CharField(max_length=3, default="USD")
    platform_ref = models.CharField(max_length=200, blank=True, help_text="Study id or HIT type id.")
    # Keys and value shapes: annotation/batch_options.py (checked on every save).
    options = models.JSONField(default=dict, blank=True)
    release = models.ForeignKey(
        "exports.Release",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="expert_batches",
        help_text="For expert-answer batches: the release whose questions the experts answer.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created = models.DateTimeField(auto_now_add=True)
    published_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return f"Batch({self.pk}) {self.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save, refusing options outside the schema (``BatchOptionsError`` names the key)."""
        check_batch_options(self.options)
        super().save(*args, **kwargs)

    def _move(self, target: str) -> None:
        if target not in self.TRANSITIONS[self.status]:
            raise IllegalTransition(self, self.status, target)
        self.status = target

    def publish(self) -> None:
        """Mark the batch published (the provider has accepted it)."""
        self._move(self.Status.PUBLISHED)
        self.published_at = self.published_at or timezone.now()
        self.save(update_fields=["status", "published_at"])

    publish.alters_data = True  # type: ignore[attr-defined]

    def pause(self) -> None:
        """Stop handing out new assignments; submitted work is kept."""
        self._move(self.Status.PAUSED)
        self.save(update_fields=["status"])

    pause.alters_data = True  # type: ignore[attr-defined]

    def complete(self) -> None:
        """Close the batch because its work is done or its budget is spent."""
        self._move(self.Status.COMPLETED)
        self.closed_at = timezone.now()
        self.save(update_fields=["status", "closed_at"])

    complete.alters_data = True  # type: ignore[attr-defined]

    def cancel(self) -> None:
        """Withdraw the batch; nothing new is handed out."""
        self._move(self.Status.CANCELLED)
        self.closed_at = timezone.now()
        self.save(update_fields=["status", "closed_at"])

    cancel.alters_data = True  # type: ignore[attr-defined]


class HITQuerySet(models.QuerySet):
    """Queries over HITs shared by the local crowd, the platform entry points and the dashboards."""

    def with_live_count(self) -> HITQuerySet:
        """Annotate ``n_live``: assignments holding a slot (not returned or expired)."""
        return self.annotate(
            n_live=models.Count(
                "assignments",
                filter=~Q(assignments__status__in=[Assignment.Status.RETURNED, Assignment.Status.EXPIRED]),
            )
        )

    def available_for(self, worker: Any) -> HITQuerySet:
        """Open HITs of published batches with a free slot that ``worker`` may take.

        A worker never gets two assignments of one HIT, and never validates a QA pair they wrote
        (SciQ stage 2; SyllabusQA's cap rules live in the claiming service).
        """
        return (
            self.with_live_count()
            .filter(
                status=HIT.Status.OPEN, batch__status=Batch.Status.PUBLISHED, n_live__lt=F("max_assignments")
            )
            .exclude(assignments__worker=worker)
            .exclude(qa_pair__assignment__worker=worker)
        )

    def complete_done(self) -> int:
        """Mark completed, in one conditional UPDATE, the open HITs of this queryset whose every slot
        holds submitted work (the submitted work is counted inside the statement); returns how many."""
        done = (
            Assignment.objects.filter(hit=models.OuterRef("pk"))
            .exclude(
                status__in=[Assignment.Status.ACCEPTED, Assignment.Status.RETURNED, Assignment.Status.EXPIRED]
            )
            .order_by()
            .values("hit")
            .annotate(n=models.Count("pk"))
            .values("n")
        )
        return self.filter(
            status=HIT.Status.OPEN, max_assignments__lte=Coalesce(models.Subquery(done), 0)
        ).update(status=HIT.Status.COMPLETED)

    complete_done.alters_data = True  # type: ignore[attr-defined]


class HIT(models.Model):
    """One task shown to workers: a syllabus, three passages, or a QA pair to validate."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        COMPLETED = "completed", "Completed"
        EXPIRED = "expired", "Expired"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="hits")
    position = models.PositiveIntegerField(default=0)
    document = models.ForeignKey(
        Document, on_delete=models.PROTECT, null=True, blank=True, related_name="hits"
    )
    passages = models.ManyToManyField(Passage, blank=True, related_name="hits")
    qa_pair = models.ForeignKey(
        "QAPair",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="validation_hits",
        help_text="For SciQ stage 2: the pair to validate.",
    )
    max_assignments = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN, db_index=True)
    platform_ref = models.CharField(max_length=200, blank=True, db_index=True, help_text="e.g. MTurk HITId.")
    created = models.DateTimeField(auto_now_add=True)

    objects = HITQuerySet.as_manager()

    class Meta:
        ordering = ["batch", "position"]
        verbose_name = "HIT"
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="hit_unique_position")]

    def __str__(self) -> str:
        return f"HIT({self.pk}) of Batch({self.batch_id})"

    def live_assignment_count(self) -> int:
        """Assignments holding a slot of this HIT right now."""
        return self.assignments.live().count()

    def complete_if_done(self) -> bool:
        """Mark the HIT completed once every slot holds submitted work; returns True when it did.

        One conditional UPDATE (the submitted work is counted inside it), so the follow-up job and a
        platform sync that run it for the same HIT, or a retried job, complete it once.
        """
        if self.status != self.Status.OPEN:
            return False
        completed = HIT.objects.filter(pk=self.pk).complete_done()
        if completed:
            self.status = self.Status.COMPLETED
        return bool(completed)

    complete_if_done.alters_data = True  # type: ignore[attr-defined]


class AssignmentQuerySet(models.QuerySet):
    """Queries over assignments shared by views, sync and review."""

    def live(self) -> AssignmentQuerySet:
        """Assignments that hold a slot of their HIT (not returned or expired)."""
        return self.exclude(status__in=[Assignment.Status.RETURNED, Assignment.Status.EXPIRED])

    def overdue(self, now: Optional[Any] = None) -> AssignmentQuerySet:
        """Accepted assignments whose time limit has passed."""
        return self.filter(status=Assignment.Status.ACCEPTED, expires_at__lt=now or timezone.now())


class Assignment(models.Model):
    """One worker's attempt at one HIT, with an explicit status machine and an autosaved draft.

    accepted -> submitted -> approved | rejected; accepted -> returned | expired. A rejected
    assignment may be approved later (reversing a rejection is a normal platform operation), and a
    returned or expired one may be reopened by the same worker (it keeps its draft).
    """

    class Status(models.TextChoices):
        ACCEPTED = "accepted", "Accepted"
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETURNED = "returned", "Returned"
        EXPIRED = "expired", "Expired"

    TRANSITIONS: dict[str, tuple[str, ...]] = {
        Status.ACCEPTED: (Status.SUBMITTED, Status.RETURNED, Status.EXPIRED),
        Status.SUBMITTED: (Status.APPROVED, Status.REJECTED),
        Status.REJECTED: (Status.APPROVED,),
        Status.APPROVED: (),
        Status.RETURNED: (Status.ACCEPTED,),
        Status.EXPIRED: (Status.ACCEPTED,),
    }

    hit = models.ForeignKey(HIT, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey("crowd.Worker", on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACCEPTED, db_index=True)
    answers = models.JSONField(
        default=dict, blank=True, help_text="Submitted form fields (HIT form contract)."
    )
    draft = models.JSONField(default=dict, blank=True)
    draft_revisions = models.JSONField(
        default=dict, blank=True, help_text="Per draft field, the revision of its stored value."
    )
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    accepted_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    followed_up_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the after-submission job (HIT completion, QC, quiz grade) finished with it.",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    time_on_task_seconds = models.FloatField(null=True, blank=True)
    active_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="Time the HIT page was visible and in use (annotation.active_time); None without script.",
    )
    active_pages = models.JSONField(
        default=dict, blank=True, help_text="Per page load of the HIT, its active milliseconds."
    )
    feedback = models.TextField(blank=True, help_text="Reason given to the worker on rejection.")
    platform_ref = models.CharField(max_length=200, blank=True, db_index=True, help_text="e.g. AssignmentId.")
    platform_meta = models.JSONField(default=dict, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-accepted_at"]
        constraints = [
            models.UniqueConstraint(fields=["hit", "worker"], name="assignment_one_per_worker"),
        ]
        indexes = [models.Index(fields=["status", "expires_at"], name="assignment_status_expiry")]

    def __str__(self) -> str:
        return f"Assignment({self.pk}) {self.status}"

    def _check_move(self, target: str) -> None:
        if target not in self.TRANSITIONS[self.status]:
            raise IllegalTransition(self, self.status, target)

    def _move(self, target: str) -> None:
        self._check_move(target)
        self.status = target

    def save_draft(self, fields: dict[str, Any], revisions: Optional[dict[str, int]] = None) -> None:
        """Store the worker's unfinished form; only an accepted assignment has a draft.

        With ``revisions`` (the page's per-field revisions) each field keeps its newest edit
        (:func:`annotation.drafts.merge_draft`); without, the form replaces the draft.
        """
        if self.status != self.Status.ACCEPTED:
            raise IllegalTransition(self, self.status, "draft")
        self.draft, self.draft_revisions = merge_draft(
            self.draft or {}, self.draft_revisions or {}, fields, revisions
        )
        self.draft_saved_at = timezone.now()
        self.save(update_fields=["draft", "draft_revisions", "draft_saved_at"])

    save_draft.alters_data = True  # type: ignore[attr-defined]

    def record_active(self, page: str, ms: int, now: Optional[Any] = None) -> None:
        """Merge a HIT page's report of its active time (:mod:`annotation.active_time`); only while
        the assignment is open, so time reported after the submission never changes its pay."""
        if self.status != self.Status.ACCEPTED:
            return
        wall = ((now or timezone.now()) - self.accepted_at).total_seconds()
        self.active_pages, self.active_seconds = merge_report(self.active_pages or {}, page, ms, wall)
        self.save(update_fields=["active_pages", "active_seconds"])

    record_active.alters_data = True  # type: ignore[attr-defined]

    def submit(self, answers: dict[str, Any], now: Optional[Any] = None) -> None:
        """Store the final answers and the time on task.

        The write is one conditional UPDATE (``WHERE status = 'accepted'``): it takes the row lock and
        checks the stored status in the same statement, so of two submissions racing each other, or a
        submission racing the expiry, exactly one wins without a locking read before it. Call it inside
        the transaction that stores what the submission holds.

        Raises:
            IllegalTransition: unless the assignment is accepted, in memory and in the database (the
                status is then refreshed from the database).
        """
        self._check_move(self.Status.SUBMITTED)
        now = now or timezone.now()
        values = {
            "status": self.Status.SUBMITTED,
            "answers": answers,
            "submitted_at": now,
            "time_on_task_seconds": max(0.0, (now - self.accepted_at).total_seconds()),
        }
        if not type(self).objects.filter(pk=self.pk, status=self.Status.ACCEPTED).update(**values):
            self.refresh_from_db(fields=["status"])
            raise IllegalTransition(self, self.status, self.Status.SUBMITTED)
        for name, value in values.items():
            setattr(self, name, value)

    submit.alters_data = True  # type: ignore[attr-defined]

    def approve(self) -> None:
        """Accept the work (the caller tells the platform and records the payment)."""
        self._move(self.Status.APPROVED)
        self.reviewed_at = timezone.now()
        self.save(update_fields=["status", "reviewed_at"])

    approve.alters_data = True  # type: ignore[attr-defined]

    def reject(self, reason: str) -> None:
        """Reject the work with a reason the worker will see.

        Raises:
            ValidationError: when the reason is empty.
        """
        if not reason.strip():
            raise ValidationError(
                {"feedback": "A rejection needs a reason the worker can read."}, code="required"
            )
        self._move(self.Status.REJECTED)
        self.feedback = reason.strip()
        self.reviewed_at = timezone.now()
        self.save(update_fields=["status", "feedback", "reviewed_at"])

    reject.alters_data = True  # type: ignore[attr-defined]

    def return_(self) -> None:
        """The worker gives the HIT back; its slot becomes available to others."""
        self._move(self.Status.RETURNED)
        self.save(update_fields=["status"])

    return_.alters_data = True  # type: ignore[attr-defined]

    def reopen(self, expires_at: Any, platform_ref: str = "") -> None:
        """The same worker takes a returned or expired HIT again (MTurk lets them); the draft is kept."""
        self._move(self.Status.ACCEPTED)
        self.accepted_at = timezone.now()
        self.expires_at = expires_at
        self.platform_ref = platform_ref or self.platform_ref
        self.save(update_fields=["status", "accepted_at", "expires_at", "platform_ref"])

    reopen.alters_data = True  # type: ignore[attr-defined]

    @property
    def is_overdue(self) -> bool:
        """True when the assignment is still accepted but its time limit has passed."""
        return (
            self.status == self.Status.ACCEPTED
            and self.expires_at is not None
            and self.expires_at < timezone.now()
        )

    def expire(self) -> None:
        """The time limit passed; the slot is reclaimed."""
        self._move(self.Status.EXPIRED)
        self.save(update_fields=["status"])

    expire.alters_data = True  # type: ignore[attr-defined]

    @classmethod
    def expire_all_overdue(cls, batch: Optional[Batch] = None) -> int:
        """Expire every accepted assignment past its time limit (of one batch, or all); returns the count."""
        count = 0
        overdue = cls.objects.overdue()
        if batch is not None:
            overdue = overdue.filter(hit__batch=batch)
        for assignment in overdue.only("pk", "status", "expires_at"):
            count += assignment.expire_if_overdue()
        return count

    def expire_if_overdue(self) -> bool:
        """Expire this assignment, under a row lock, when its time limit has passed; True when it did.

        The lock makes a submission racing with the expiry win or lose cleanly, never both.
        """
        if not self.is_overdue:
            return False
        with transaction.atomic():
            locked = type(self).objects.select_for_update().get(pk=self.pk)
            expired = locked.is_overdue
            if expired:
                locked.expire()
        self.refresh_from_db(fields=["status"])
        return expired

    expire_if_overdue.alters_data = True  # type: ignore[attr-defined]

    def default_expiry(self) -> Any:
        """When this assignment's time limit ends, from its batch's limit."""
        return self.accepted_at + timedelta(minutes=self.hit.batch.time_limit_minutes)


QUESTION_TYPE_CHOICES = [(t, t) for t in qt.ALL_TYPES]


class QAPair(models.Model):
    """A question with its answer, written by a worker or imported from a released dataset."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending review"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="qa_pairs")
    external_id = models.CharField(max_length=100, blank=True, help_text="Id in the source release.")
    document = models.ForeignKey(
        Document, on_delete=models.PROTECT, null=True, blank=True, related_name="qa_pairs"
    )
    passage = models.ForeignKey(
        Passage, on_delete=models.PROTECT, null=True, blank=True, related_name="qa_pairs"
    )
    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, null=True, blank=True, related_name="qa_pairs"
    )
    position = models.PositiveSmallIntegerField(default=0, help_text="Card index within its assignment.")
    question_type = models.CharField(max_length=20, choices=QUESTION_TYPE_CHOICES)
    answer_source = models.GeneratedField(
        expression=Case(
            *[When(question_type=t, then=Value(src)) for t, src in qt.ANSWER_SOURCE.items()],
            default=Value(""),
        ),
        output_field=models.CharField(max_length=20),
        db_persist=True,
    )
    question = models.TextField()
    answer = models.TextField(blank=True)
    normalized_answer = models.TextField(blank=True, help_text="Answer after QC normalisation.")
    original_split = models.CharField(max_length=10, blank=True, db_index=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    qc_flags = models.JSONField(default=list, blank=True)
    qc_severity = models.JSONField(
        default=dict,
        blank=True,
        help_text="The severity each QC flag was raised with on this pair (error, review or fixed): "
        "one code, such as too_short, can be an error or a review flag.",
    )
    metadata = models.JSONField(
        default=dict, blank=True, help_text="Source-specific fields (e.g. ARC answer key)."
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["corpus", "document", "id"]
        verbose_name = "QA pair"
        constraints = [
            models.UniqueConstraint(
                fields=["corpus", "external_id"],
                condition=~Q(external_id=""),
                name="qapair_unique_external_id",
            ),
            models.CheckConstraint(
                condition=Q(question_type__in=list(qt.ALL_TYPES)), name="qapair_known_question_type"
            ),
        ]
        indexes = [models.Index(fields=["corpus", "question_type"], name="qapair_corpus_type")]

    def __str__(self) -> str:
        return f"QAPair({self.pk}) {self.question[:60]}"


class AnswerSpan(models.Model):
    """Text copied from the document as (part of) the answer, with where it is."""

    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="spans")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField(null=True, blank=True, help_text="Offset in the document text.")
    end = models.PositiveIntegerField(null=True, blank=True)
    page = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        # By the pair's id, not by the pair's own ordering, which would join its corpus and document
        # into every query of these rows (each chunk of an export prefetches them).
        ordering = ["qa_pair_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["qa_pair", "position"], name="span_unique_position"),
            models.CheckConstraint(
                condition=Q(start__isnull=True) | Q(end__gte=models.F("start")), name="span_end_after_start"
            ),
        ]

    def __str__(self) -> str:
        return self.text[:60]


class ReasoningStep(models.Model):
    """One written step from the document to an implicit answer."""

    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["qa_pair_id", "position"]
        constraints = [models.UniqueConstraint(fields=["qa_pair", "position"], name="step_unique_position")]

    def __str__(self) -> str:
        return self.text[:60]


class Distractor(models.Model):
    """A wrong answer option: from the source release, suggested by a model, or written by a worker."""

    class Origin(models.TextChoices):
        ORIGINAL = "original", "Source release"
        MODEL = "model", "Model suggestion"
        WORKER = "worker", "Written by a worker"

    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="distractors")
    text = models.CharField(max_length=500)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    position = models.PositiveSmallIntegerField(default=0)
    model_version = models.CharField(max_length=100, blank=True)
    model_score = models.FloatField(null=True, blank=True)
    model_rank = models.PositiveSmallIntegerField(null=True, blank=True)
    selected = models.BooleanField(default=False, help_text="Chosen by a validator (or part of the release).")
    validation = models.ForeignKey(
        "Validation", on_delete=models.CASCADE, null=True, blank=True, related_name="distractors"
    )

    class Meta:
        ordering = ["qa_pair_id", "origin", "position"]
        indexes = [models.Index(fields=["qa_pair", "selected"], name="distractor_pair_selected")]

    def __str__(self) -> str:
        return self.text


class Validation(models.Model):
    """A stage-2 verdict on a SciQ QA pair by a worker who did not write it."""

    class Flag(models.TextChoices):
        UNGRAMMATICAL = "ungrammatical", "Ungrammatical"
        FALSE_ANSWER = "false_answer", "The answer is false"
        UNRELATED = "unrelated", "Unrelated to science"
        TOO_SPECIFIC = "too_specific", "Too specific to the passage"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="validation")
    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="validations")
    flags = models.JSONField(default=list, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Validation({self.pk}) of QAPair({self.qa_pair_id})"

    @property
    def is_exam_worthy(self) -> bool:
        """True when the validator raised no flag."""
        return not self.flags


class ExpertAnswer(models.Model):
    """An expert's oracle answer to a crowd-written question (SyllabusQA 2.3 "Agreement among Annotators").

    The expert sees the question and the syllabus, never the crowd's answer, chooses the question type
    first and then answers; agreement with the crowd pair (``qa_pair``) is measured by
    ``evaluation.services.human``. A row of its own (not only the assignment's answers JSON) so that
    agreement queries join plain columns.
    """

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="expert_answer")
    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="expert_answers")
    question_type = models.CharField(max_length=20, choices=QUESTION_TYPE_CHOICES)
    answer = models.TextField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["qa_pair_id", "pk"]

    def __str__(self) -> str:
        return f"ExpertAnswer({self.pk}) to QAPair({self.qa_pair_id})"


class ScreeningGrade(models.Model):
    """The automatic grade of a screening assignment's quiz (advice for the researcher, who decides).

    A row of its own, written by ``annotation.screening.grader.grade_screening_assignment`` after
    the submission is stored; re-grading updates the one row (``assignment`` is unique). ``items`` holds
    one dict per quiz question: question, answer, references, label (correct / incorrect / uncertain /
    unanswered), confidence and the closest reference.
    """

    class Status(models.TextChoices):
        GRADED = "graded", "Graded"
        UNGRADED = "ungraded", "Not graded"

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="screening_grade")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.GRADED)
    reason = models.TextField(blank=True, help_text="Why the quiz was not graded (e.g. no SemEval data).")
    n_questions = models.PositiveSmallIntegerField(default=0)
    n_graded = models.PositiveSmallIntegerField(default=0)
    n_correct = models.PositiveSmallIntegerField(default=0)
    suggestion = models.CharField(max_length=20, blank=True, help_text="pass / check (advice only).")
    items = models.JSONField(default=list, blank=True)
    classifier = models.CharField(max_length=100, blank=True, help_text="Which trained grader (data hash).")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"ScreeningGrade({self.pk}) of Assignment({self.assignment_id}): {self.score_label}"

    @property
    def score_label(self) -> str:
        """``2/3`` (correct of questions) or ``ungraded``, as the review queue shows it."""
        if self.status != self.Status.GRADED:
            return "ungraded"
        return f"{self.n_correct}/{self.n_questions}"


class Job(models.Model):
    """A long-running piece of work (import, filter, QC, export, training) with progress and result.

    Celery tasks load their Job, report progress here and store the result here, so a page can show
    pending / running / failed / done explicitly and a retry can see what was already done.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        FAILED = "failed", "Failed"
        DONE = "done", "Done"

    kind = models.CharField(max_length=100, db_index=True)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(null=True, blank=True)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    celery_task_id = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=20, default="default")
    created = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"Job({self.pk}) {self.kind} {self.status}"

    def start(self, total: Optional[int] = None) -> None:
        """Mark running (again, on a retry) and reset the progress counter."""
        self.status = self.Status.RUNNING
        self.started_at = timezone.now()
        self.progress_done = 0
        self.progress_total = total
        self.error = ""
        self.save(update_fields=["status", "started_at", "progress_done", "progress_total", "error"])

    start.alters_data = True  # type: ignore[attr-defined]

    def report(self, done: int, total: Optional[int] = None) -> None:
        """Record progress; cheap enough to call every few hundred items."""
        self.progress_done = done
        if total is not None:
            self.progress_total = total
        self.save(update_fields=["progress_done", "progress_total"])

    def finish(self, result: dict[str, Any]) -> None:
        """Store the result and mark done."""
        self.status = self.Status.DONE
        self.result = result
        self.finished_at = timezone.now()
        self.save(update_fields=["status", "result", "finished_at"])

    finish.alters_data = True  # type: ignore[attr-defined]

    def fail(self, error: str) -> None:
        """Store the error message and mark failed."""
        self.status = self.Status.FAILED
        self.error = error
        self.finished_at = timezone.now()
        self.save(update_fields=["status", "error", "finished_at"])

    fail.alters_data = True  # type: ignore[attr-defined]

    def run(self, work: Callable[[Job], dict[str, Any]], total: Optional[int] = None) -> dict[str, Any]:
        """Run ``work(job)`` as this Job: mark it running, store what it returns and mark it done.

        On any exception the Job is marked failed with the error (so a page never shows a dead job as
        running) and the exception propagates, so Celery records the task as failed too. Re-running a
        failed Job starts it afresh; ``work`` itself must be safe to repeat.
        """
        self.start(total=total)
        try:
            result = work(self)
        except Exception as exc:
            self.fail(f"{type(exc).__name__}: {exc}")
            raise
        self.finish(result)
        return {"job": self.pk, "status": self.status}

    run.alters_data = True  # type: ignore[attr-defined]
