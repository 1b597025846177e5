"""What workers write: QA pairs with their spans and steps, distractors, validations, expert answers and
screening grades.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Case, Q, Value, When

from annotation import question_types as qt
from annotation.models.corpus import Corpus, Document, Passage
from annotation.models.work import Assignment

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
    original_split = models.CharField(max_length=10, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
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
        # Plain B-tree indexes rather than db_index (see annotation.models.work.HIT.Meta).
        indexes = [
            models.Index(fields=["corpus", "question_type"], name="qapair_corpus_type"),
            models.Index(fields=["original_split"], name="qapair_original_split"),
            models.Index(fields=["status"], name="qapair_status"),
        ]

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
