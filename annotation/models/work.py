"""Batches, HITs and assignments: the crowd work and its life cycle (named, checked transitions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Optional

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from annotation.active_time import merge_report
from annotation.batch_options import check_batch_options
from annotation.drafts import merge_draft
from annotation.models.corpus import Corpus, Document, Passage
from annotation.platforms import Platform
from annotation.sql_writes import BoundWrite, SqlUpdate, together


class IllegalTransition(Exception):
    """Raised when a state change is not allowed from the object's current status."""

    def __init__(self, obj: models.Model, current: str, target: str) -> None:
        super().__init__(f"{type(obj).__name__}({obj.pk}) cannot go from '{current}' to '{target}'")
        self.current = current
        self.target = target


class Batch(models.Model):
    """A unit of crowd work a researcher launches: HITs of one kind on one provider."""

    class Kind(models.TextChoices):
        SYLLABUS_QA = "syllabus_qa", "Syllabus QA writing"
        SCIQ_QUESTION = "sciq_question", "SciQ question writing"
        SCIQ_DISTRACTOR = "sciq_distractor", "SciQ validation and distractors"
        SCREENING = "screening", "Screening"
        EXPERT_ANSWER = "expert_answer", "Expert answers (agreement)"
        VERDICT_VALIDATION = "verdict_validation", "Model verdict validation"

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
    provider = models.CharField(max_length=20, choices=Platform.choices, default=Platform.LOCAL)
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
        """Annotate ``n_live``: assignments holding a slot (not returned or expired, and vouched for by
        their platform), and ``n_unconfirmed``: live sessions their platform has not vouched for yet.

        Unconfirmed MTurk sessions hold no slot (anyone who knows a worker id can open one under a
        made-up ``assignmentId``), so dashboards show them apart from the places taken.
        """
        live = ~Q(assignments__status__in=[Assignment.Status.RETURNED, Assignment.Status.EXPIRED])
        return self.annotate(
            n_live=models.Count("assignments", filter=live & Q(assignments__vouched=True)),
            n_unconfirmed=models.Count("assignments", filter=live & Q(assignments__vouched=False)),
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
        holds submitted work the platform vouches for (counted inside the statement); returns how many.

        Work under an MTurk ``assignmentId`` MTurk has not confirmed yet does not count: made-up ids
        must never close a HIT to the workers MTurk sends (sync confirms submitted work, then completes).
        """
        done = (
            Assignment.objects.filter(hit=models.OuterRef("pk"))
            .vouched()
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
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    platform_ref = models.CharField(
        max_length=200,
        blank=True,
        help_text="The HIT's own id on a platform that lists each HIT as a unit; empty elsewhere.",
    )
    created = models.DateTimeField(auto_now_add=True)

    objects = HITQuerySet.as_manager()

    class Meta:
        ordering = ["batch", "position"]
        verbose_name = "HIT"
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="hit_unique_position")]
        # Plain B-tree indexes rather than db_index: on PostgreSQL db_index on a CharField adds a second,
        # varchar_pattern_ops index for LIKE 'prefix%' that no query here uses and that every insert, and
        # every update that changes an indexed column, writes too.
        indexes = [
            models.Index(fields=["status"], name="hit_status"),
            models.Index(fields=["platform_ref"], name="hit_platform_ref"),
        ]

    def __str__(self) -> str:
        return f"HIT({self.pk}) of Batch({self.batch_id})"

    def live_assignment_count(self) -> int:
        """Assignments holding a slot of this HIT right now (live, and vouched for by their platform)."""
        return self.assignments.live().vouched().count()

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

    def vouched(self) -> AssignmentQuerySet:
        """Assignments their platform vouches for: the only ones slots, caps and completion count.

        Local and Prolific sessions are vouched for at arrival; an MTurk assignment only once MTurk
        listed or returned it as submitted work of the same worker on the same HIT (sync, review).
        """
        return self.filter(vouched=True)

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
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACCEPTED)
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
    vouched = models.BooleanField(
        default=True,
        help_text=(
            "The platform vouches for this session: at arrival, or, on a platform that vouches only for "
            "submitted work, once it lists the submitted assignment for the same worker and HIT. Only "
            "vouched work fills slots and caps."
        ),
    )

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-accepted_at"]
        constraints = [
            # One counted session per worker and HIT; unconfirmed MTurk sessions (any assignmentId a
            # visitor makes up) are each their own row and never displace the worker's real one.
            models.UniqueConstraint(
                fields=["hit", "worker"], condition=Q(vouched=True), name="assignment_one_per_worker"
            ),
            # One local row per platform session id (MTurk assignmentId, Prolific SESSION_ID).
            models.UniqueConstraint(
                fields=["platform_ref"], condition=~Q(platform_ref=""), name="assignment_one_per_platform_ref"
            ),
        ]
        # Status has no index of its own: the status and expiry index, whose first column it is, serves
        # it (see HIT.Meta on db_index). platform_ref keeps db_index: removing it, Django's AlterField
        # also drops the index of assignment_one_per_platform_ref, the other index on that column.
        indexes = [
            models.Index(fields=["status", "expires_at"], name="assignment_status_expiry"),
            # The submissions still owed their follow-up: few at any time, read by every follow-up
            # run and the sweep (crowd.services.followups).
            models.Index(
                fields=["submitted_at"],
                condition=Q(followed_up_at__isnull=True, submitted_at__isnull=False),
                name="assignment_followup_owed",
            ),
        ]

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

    def submit(
        self,
        answers: dict[str, Any],
        now: Optional[Any] = None,
        active: Optional[tuple[str, int]] = None,
        then: Sequence[BoundWrite] = (),
    ) -> list[Optional[int]]:
        """Store the final answers and the time on task, with the page's last active-time report.

        The write is one conditional UPDATE (``WHERE status = 'accepted'``): it takes the row lock and
        checks the stored status in the same statement, so of two submissions racing each other, or a
        submission racing the expiry, exactly one wins without a locking read before it. ``active`` (the
        ``(page id, active ms)`` the HIT page sends with its form) is merged as :meth:`record_active`
        merges it, in the same UPDATE. Call it inside the transaction that stores what the submission
        holds.

        ``then``: writes of what the submission holds, run after the UPDATE in the same round trip
        (:func:`annotation.sql_writes.together`); what each gave is returned. They run whether or not
        the UPDATE changed the row, so when it did not, the transaction is marked for rollback
        (``transaction.set_rollback``) before :class:`IllegalTransition` is raised: let the exception
        leave the ``atomic`` block.

        Raises:
            IllegalTransition: unless the assignment is accepted, in memory and in the database (the
                status is then refreshed from the database).
            TransactionManagementError: for ``then`` writes outside an ``atomic`` block.
        """
        self._check_move(self.Status.SUBMITTED)
        write = _SUBMIT if active is None else _SUBMIT_WITH_ACTIVE_TIME
        if then and not transaction.get_connection(write.using).in_atomic_block:
            raise TransactionManagementError("a submit with further writes runs inside an atomic block")
        now = now or timezone.now()
        wall = (now - self.accepted_at).total_seconds()
        values = {
            "status": self.Status.SUBMITTED,
            "answers": answers,
            "submitted_at": now,
            "time_on_task_seconds": max(0.0, wall),
        }
        if active is not None:
            values["active_pages"], values["active_seconds"] = merge_report(
                self.active_pages or {}, *active, wall
            )
        changed, *written = together(
            write.bind(list(values.values()), (self.pk, self.Status.ACCEPTED)), *then
        )
        if not changed:
            self.refresh_from_db(fields=["status"])
            if then:
                transaction.set_rollback(True, using=write.using)
            raise IllegalTransition(self, self.status, self.Status.SUBMITTED)
        for name, value in values.items():
            setattr(self, name, value)
        return written

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


_SUBMIT_FIELDS = ("status", "answers", "submitted_at", "time_on_task_seconds")
_SUBMIT = SqlUpdate(Assignment, set_fields=_SUBMIT_FIELDS, where=("id", "status"))
"""``Assignment.objects.filter(pk=..., status=...).update(...)`` of :meth:`Assignment.submit`."""
_SUBMIT_WITH_ACTIVE_TIME = SqlUpdate(
    Assignment,
    set_fields=(*_SUBMIT_FIELDS, "active_pages", "active_seconds"),
    where=("id", "status"),
)
"""The same with the active-time report the HIT page sends with its form."""
