"""The contract between the generic HIT views and each kind of HIT (syllabus QA, SciQ stage 1 and 2).

The views (``worker/hit_views.py``) do everything that is the same for every HIT: find the
assignment from its signed link, consent, drafts, time limits, the one-transaction submission, and the
hand-back to MTurk / Prolific / the local crowd. A handler does what differs: which fields the form
has (docs/reference/hit-forms.md), what the page shows, how the fields are checked and how a valid
submission becomes QA pairs, spans, steps, validations and distractors.

A handler also holds the facts about its kind that the rest of the platform acts on (what a batch is
built from, its default title, whether it carries a quiz, qualifies workers, is for experts, gets QC,
has a stage 2, how many QA pairs an assignment writes). Services, forms and commands ask
``handler_for(batch.kind).<fact>`` instead of comparing kinds, so a new kind is a new choice and a new
handler.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from django.http import QueryDict

from annotation.models import HIT, Assignment
from annotation.textnorm import storable
from annotation.tutorial import Layout, load_tutorial
from annotation.tutorial_types import Tutorial

MAX_FIELD_CHARS = 5_000
"""Longest text accepted in one form field (a SyllabusQA answer or span is at most a few hundred)."""
MAX_FIELD_VALUES = 20
"""Most values one repeatable field (checkboxes) may carry."""

Fields = dict[str, Any]
"""Form fields as typed: field name -> string (or list of strings for repeatable fields)."""


@dataclass
class FormCheck:
    """The outcome of checking a submitted form.

    Attributes:
        fields: the fields exactly as typed (re-rendered on error, so nothing is lost).
        errors: field name -> messages that block the submission ("__all__" for the whole form).
        warnings: field name -> messages shown but not blocking (e.g. an answer not in the passage).
        cleaned: what ``store`` needs, filled only when there are no errors.
    """

    fields: Fields
    errors: dict[str, list[str]] = field(default_factory=dict)
    warnings: dict[str, list[str]] = field(default_factory=dict)
    cleaned: Any = None

    @property
    def ok(self) -> bool:
        """True when nothing blocks the submission."""
        return not self.errors

    def error(self, name: str, message: str) -> None:
        """Add a blocking message to a field (once: two checks finding the same fault show it once)."""
        messages = self.errors.setdefault(name, [])
        if message not in messages:
            messages.append(message)

    def warn(self, name: str, message: str) -> None:
        """Add a non-blocking message to a field (once)."""
        messages = self.warnings.setdefault(name, [])
        if message not in messages:
            messages.append(message)


class BuiltFrom(enum.StrEnum):
    """What the HITs of a batch are made of: it decides how a batch is created and what the launch form
    asks for."""

    DOCUMENTS = "documents"
    """One HIT per document of the corpus (a whole syllabus); the researcher may name the documents."""
    PASSAGES = "passages"
    """Three accepted passages per HIT that no open HIT shows and no question used."""
    QUESTIONS = "questions"
    """One accepted question per HIT, of a stage-1 batch (the parent) whose questions are validated."""
    RELEASE = "release"
    """Questions sampled from a release (``create_expert_batch``), never from a corpus."""
    FOOLED = "fooled"
    """One written pair per HIT whose model check says the model was fooled, of a batch with the model
    in the loop (the parent): made from that batch (its page, or on each submission when its
    ``model_in_the_loop`` option says ``validation``), never from a corpus."""


class HitConflict(Exception):
    """Raised by ``store`` when the world changed between the check and the store (e.g. the chosen
    passage was taken by someone else): the submission's transaction rolls back and the worker sees the
    message with every field kept."""


class HitHandler(abc.ABC):
    """What one kind of HIT shows, accepts and stores."""

    #: the template rendered for the task (it extends ``annotation/hit_base.html``).
    template_name: ClassVar[str]
    #: the tutorial content file (``annotation/tutorial_content/<name>.json``) whose instructions and
    #: examples the page shows (and whose consent, unless :meth:`tutorial` gives the kind one of its own).
    tutorial_name: ClassVar[str]
    #: what that file holds beyond the common parts, and the template that shows its examples.
    tutorial_layout: ClassVar[Layout]
    #: field names that may repeat (checkboxes), kept as lists.
    repeatable: ClassVar[frozenset[str]] = frozenset()

    #: what a batch of this kind is built from (:func:`annotation.services.batches.create_batch`).
    built_from: ClassVar[BuiltFrom]
    #: the title workers see on the platform when the researcher gives none.
    default_title: ClassVar[str]
    #: QA pairs one assignment writes, counted against the per-worker caps (0: it writes none).
    pairs_per_assignment: ClassVar[int] = 0
    #: its HITs carry a quiz on the syllabus, graded after submission.
    has_quiz: ClassVar[bool] = False
    #: its batches may carry known-answer questions on the syllabus (the quiz's questions, from the
    #: syllabus's reference pairs, shown on every HIT of the batch and graded the same way), counted as
    #: the worker's gold answers (:mod:`crowd.services.gold`).
    gold_quiz: ClassVar[bool] = False
    #: an approved assignment qualifies its worker for batches that require this batch (screening).
    qualifies_workers: ClassVar[bool] = False
    #: only invited experts may work on it; their answers are the human baseline, not crowd data.
    expert_only: ClassVar[bool] = False
    #: the pairs of a submission get the heuristic QC after it is stored (an expert's answer does not:
    #: the crowd pair it answers had its own).
    runs_qc: ClassVar[bool] = True
    #: the page's :meth:`check` runs the whole heuristic QC of the pairs it stores (the same rules with
    #: the same options as the after-submission job) and :meth:`store` keeps its flags, so the job does
    #: not run it again.
    qc_at_submit: ClassVar[bool] = False
    #: its page judges one QA pair, so its batches may carry gold and attention items: pairs with a
    #: known right answer served among the real ones (:mod:`crowd.services.gold`).
    serves_gold: ClassVar[bool] = False
    #: the kind of the stage-2 batch that validates the questions of an approved assignment (None: no
    #: stage 2).
    stage2_kind: ClassVar[Optional[str]] = None
    #: a model may answer its cards' questions while they are written (the batch option
    #: ``model_in_the_loop``, :mod:`evaluation.services.model_checks`); its cards are those of
    #: :data:`annotation.hits.syllabus_qa.CARD_TYPES`.
    model_in_the_loop: ClassVar[bool] = False
    #: the kind of the batch in which a second worker confirms or disputes the "fooled" verdicts of the
    #: model in the loop (None: its verdicts are not validated).
    verdict_validation_kind: ClassVar[Optional[str]] = None
    #: after a submission, a model answers the item it made (question, answer, distractors) from the
    #: options alone, and an item it answers is flagged for review (:mod:`evaluation.services.options_only`).
    options_only_check: ClassVar[bool] = False

    def tutorial(self) -> Tutorial:
        """What the consent page, the time note and the tutorial show for this kind.

        The consent's ``typical_minutes`` is also the shortest time limit a batch of this kind may have
        (:func:`annotation.services.batches.check_time_limit`).
        """
        return load_tutorial(self.tutorial_name, self.tutorial_layout)

    @abc.abstractmethod
    def accepts_field(self, name: str) -> bool:
        """True for the names of the HIT form contract (others are dropped from drafts and answers)."""

    def fields_from(self, data: QueryDict) -> Fields:
        """Keep the contract's fields of a POST (or autosave) body, as typed.

        Characters no database takes (NUL, lone surrogates) are dropped; over-long values are kept as
        typed (the request itself is bounded by ``DATA_UPLOAD_MAX_MEMORY_SIZE``) and refused by
        :meth:`checked` with a message next to the field.
        """
        fields: Fields = {}
        for name in data:
            if not self.accepts_field(name):
                continue
            if name in self.repeatable:
                fields[name] = [storable(v) for v in data.getlist(name)[:MAX_FIELD_VALUES]]
            else:
                fields[name] = storable(data.get(name, ""))
        return fields

    def checked(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """The size limits, then the kind's own :meth:`check` (never run on over-long input)."""
        limits = FormCheck(fields=fields)
        for name, value in fields.items():
            values = value if isinstance(value, list) else [value]
            longest = max((len(v) for v in values), default=0)
            if longest > MAX_FIELD_CHARS:
                limits.error(
                    name, f"This is {longest:,} characters long; at most {MAX_FIELD_CHARS:,} are accepted."
                )
        if not limits.ok:
            limits.error("__all__", "Some fields are too long; shorten the ones marked and submit again.")
            return limits
        return self.check(hit, assignment, fields)

    @abc.abstractmethod
    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """What the template needs to show the task (document, passages, the pair to validate...).

        ``assignment`` is None in preview mode (MTurk's ASSIGNMENT_ID_NOT_AVAILABLE, researchers).
        ``token`` is the page's signed link token (the assignment's, or the HIT's preview token), for the
        URLs the page asks back through it (a syllabus page's PDF image); the worker app makes it.
        """

    @abc.abstractmethod
    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Check a submission the way the browser did, plus what only the server can check."""

    def submit(
        self, assignment: Assignment, check: FormCheck, active: Optional[tuple[str, int]] = None
    ) -> None:
        """Submit ``assignment`` with the checked answers (:meth:`Assignment.submit`, with the page's
        active-time report ``active``) and store what they hold (:meth:`store`), inside the caller's
        ``atomic`` block. A kind may send its first rows with the submit's UPDATE in one round trip
        (SciQ's question).

        Raises:
            IllegalTransition: when the assignment was no longer accepted (a double submission, an
                expiry that won the race): let it leave the ``atomic`` block, which rolls back.
            HitConflict: to roll the submission back and show the worker why.
        """
        assignment.submit(check.fields, active=active)
        self.store(assignment, check)

    @abc.abstractmethod
    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """Turn a valid submission into rows; called inside the submission's transaction, after
        :meth:`Assignment.submit` (:meth:`submit` calls both).

        Raises:
            HitConflict: to roll the submission back and show the worker why.
        """

    def confirmed(self, assignment: Assignment) -> None:
        """Apply what a submission does only once its platform vouches for it (default: nothing).

        Called once, when an MTurk session becomes vouched (sync or the review's check), inside the
        caller's transaction; a session vouched at arrival has its effects applied by :meth:`store`.
        Why: MTurk cannot confirm a session before it is submitted, so work under a made-up id must not
        use up what genuine workers need (a SciQ passage, its rejection count) until MTurk vouches for it.
        """
        return None
