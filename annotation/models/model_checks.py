"""The model in the loop's record of one syllabus card: what a model answered and what the judge said.

Why a row of its own (issue 32): the check is asked while the worker writes, before any QA pair exists
(the card's question and answer are in the draft), so it is kept per assignment and card position; when
the submission is stored, the after-submission job links it to the card's pair (or asks the model again
when the worker changed the card since). Releases, the batch page and the dataset card read the pair's
check; nothing here calls a model.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from annotation.models.answers import QUESTION_TYPE_CHOICES, QAPair, Validation
from annotation.models.work import Assignment


class ModelCheck(models.Model):
    """One card's question answered by a model and judged against the worker's answer."""

    class Verdict(models.TextChoices):
        FOOLED = "fooled", "Model fooled"
        MATCHED = "matched", "Model matched"

    class Source(models.TextChoices):
        PAGE = "page", "Asked from the HIT page"
        SUBMISSION = "submission", "Asked after submission"

    class Validation(models.TextChoices):
        NONE = "", "Not validated"
        CONFIRMED = "confirmed", "Confirmed by a second worker"
        DISPUTED = "disputed", "Disputed by a second worker"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="model_checks")
    position = models.PositiveSmallIntegerField(help_text="Card index within its assignment.")
    qa_pair = models.OneToOneField(
        QAPair, on_delete=models.SET_NULL, null=True, blank=True, related_name="model_check"
    )
    question_type = models.CharField(max_length=20, choices=QUESTION_TYPE_CHOICES)
    question = models.TextField(help_text="The question as the model was asked it.")
    worker_answer = models.TextField(blank=True, help_text="The worker's answer the judge compared with.")
    system = models.CharField(max_length=40)
    model_version = models.CharField(max_length=200)
    model_answer = models.TextField(blank=True)
    abstained = models.BooleanField(default=False, help_text="The model said the syllabus has no answer.")
    judge = models.CharField(max_length=40)
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    score = models.FloatField()
    latency_ms = models.FloatField(help_text="Time the system took to answer, in milliseconds.")
    source = models.CharField(max_length=12, choices=Source.choices, default=Source.PAGE)
    asks = models.PositiveIntegerField(
        default=1, help_text="Times the model was asked about this card (a changed card is asked again)."
    )
    validation = models.CharField(max_length=10, choices=Validation.choices, default="", blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "position"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "position"], name="modelcheck_one_per_card"),
            models.CheckConstraint(
                condition=Q(verdict__in=["fooled", "matched"]), name="modelcheck_known_verdict"
            ),
        ]

    def __str__(self) -> str:
        return f"ModelCheck({self.pk}) card {self.position + 1}: {self.verdict}"

    def matches(self, question: str, answer: str) -> bool:
        """True when the check was asked about this question and answer (the card is unchanged since)."""
        return self.question.strip() == question.strip() and self.worker_answer.strip() == answer.strip()


class OptionsOnlyCheck(models.Model):
    """A SciQ stage-2 item answered by a model from its options alone, without the passage.

    Why (papers/sciq-crowdsourcing-mcq.txt): poor distractors make a question trivial, answerable without
    reading anything. After a validator chose the item's three distractors, a language model scores the
    four options as continuations of the question (no passage); when it picks the correct answer both
    by total and by per-character log-likelihood, the item is ``answered`` and its pair is flagged
    ``options_only`` for review. One row per validation (each validator's distractors make their own
    item); written by :mod:`evaluation.services.options_only`.
    """

    validation = models.OneToOneField(Validation, on_delete=models.CASCADE, related_name="options_only_check")
    qa_pair = models.ForeignKey(QAPair, on_delete=models.CASCADE, related_name="options_only_checks")
    model_version = models.CharField(max_length=200)
    options = models.JSONField(
        help_text="The options as scored: the correct answer first, then the distractors."
    )
    scores = models.JSONField(help_text="Each option's summed log-likelihood after the question.")
    chosen = models.PositiveSmallIntegerField(help_text="The option with the highest log-likelihood.")
    chosen_per_char = models.PositiveSmallIntegerField(help_text="The highest per character of the option.")
    answered = models.BooleanField(help_text="Both choices are the correct answer (option 0).")
    latency_ms = models.FloatField()
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["qa_pair", "validation"]

    def __str__(self) -> str:
        return f"OptionsOnlyCheck({self.pk}) of Validation({self.validation_id}): answered={self.answered}"
