"""The contract between the generic HIT views and each kind of HIT (syllabus QA, SciQ stage 1 and 2).

The views (``annotation/hit_views.py``) do everything that is the same for every HIT: find the
assignment from its signed link, consent, drafts, time limits, the one-transaction submission, and the
hand-back to MTurk / Prolific / the local crowd. A handler does what differs: which fields the form
has (DESIGN.md's HIT form contract), what the page shows, how the fields are checked and how a valid
submission becomes QA pairs, spans, steps, validations and distractors.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from django.http import QueryDict

from annotation.models import HIT, Assignment

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
        """Add a blocking message to a field."""
        self.errors.setdefault(name, []).append(message)

    def warn(self, name: str, message: str) -> None:
        """Add a non-blocking message to a field."""
        self.warnings.setdefault(name, []).append(message)


class HitConflict(Exception):
    """Raised by ``store`` when the world changed between the check and the store (e.g. the chosen
    passage was taken by someone else): the submission's transaction rolls back and the worker sees the
    message with every field kept."""


class HitHandler(abc.ABC):
    """What one kind of HIT shows, accepts and stores."""

    #: the template rendered for the task (it extends ``annotation/hit_base.html``).
    template_name: ClassVar[str]
    #: the ``annotation.tutorial`` kind whose consent, instructions and examples the page shows.
    tutorial_kind: ClassVar[str]
    #: field names that may repeat (checkboxes), kept as lists.
    repeatable: ClassVar[frozenset[str]] = frozenset()

    @abc.abstractmethod
    def accepts_field(self, name: str) -> bool:
        """True for the names of the HIT form contract (others are dropped from drafts and answers)."""

    def fields_from(self, data: QueryDict) -> Fields:
        """Keep the contract's fields of a POST (or autosave) body, as typed."""
        fields: Fields = {}
        for name in data:
            if not self.accepts_field(name):
                continue
            fields[name] = data.getlist(name) if name in self.repeatable else data.get(name, "")
        return fields

    @abc.abstractmethod
    def context(self, hit: HIT, assignment: Optional[Assignment]) -> dict[str, Any]:
        """What the template needs to show the task (document, passages, the pair to validate...).

        ``assignment`` is None in preview mode (MTurk's ASSIGNMENT_ID_NOT_AVAILABLE, researchers).
        """

    @abc.abstractmethod
    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Check a submission the way the browser did, plus what only the server can check."""

    @abc.abstractmethod
    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """Turn a valid submission into rows; called inside the submission's transaction.

        Raises:
            HitConflict: to roll the submission back and show the worker why.
        """
