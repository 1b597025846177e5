"""Shared pieces of heuristic QC: issues with severities, text normalisation, profanity.

Why severities: some problems a worker can fix before submitting (a span that is not in the syllabus,
a 4-word question), so the HIT form shows them as errors; others are for reviewers (possible PII,
near-duplicates across workers), and some are fixed automatically (yes/no answers normalised).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

logger = logging.getLogger(__name__)

ERROR = "error"
"""The worker must fix it before the submission is accepted (shown on the HIT form)."""
REVIEW = "review"
"""Kept, but flagged for a researcher to look at."""
FIXED = "fixed"
"""Fixed automatically by normalisation; the original text is kept alongside."""

OPTIONS_ONLY = "options_only"
"""The review flag of a SciQ item a model answered from its options alone
(:mod:`evaluation.services.options_only`)."""

SEVERITY: dict[str, str] = {
    # SyllabusQA
    "pii_request": REVIEW,
    "profanity": REVIEW,
    "span_not_in_document": ERROR,
    "span_count": ERROR,
    "reasoning_step_count": ERROR,
    "yes_no_answer_not_single_word": FIXED,
    "adversarial_answer": FIXED,
    "duplicate_question": REVIEW,
    "too_short": ERROR,
    "annotator_cap_exceeded": REVIEW,
    # SciQ
    "question_length": ERROR,
    "answer_length": ERROR,
    "yes_no_question": ERROR,
    # A warning: SciQ answers are often a paraphrase of the passage (SciQ stage 1 asks only to warn).
    "answer_not_in_passage": REVIEW,
    "answer_in_question": ERROR,
    # Two sessions wrote about one passage before their platform vouched for either (docs/admission.md).
    "passage_reused": REVIEW,
    # A model answered the stage-2 item from its options alone, without the passage (poor distractors).
    "options_only": REVIEW,
    "distractor_equals_answer": ERROR,
    "duplicate_distractor": ERROR,
    "distractor_count": ERROR,
    "no_worker_distractor": ERROR,
}


@dataclass(frozen=True)
class QCIssue:
    """One QC finding on one QA pair.

    Attributes:
        code: the flag code (docs/reference/codes.md).
        severity: ``error``, ``review`` or ``fixed`` (see :data:`SEVERITY`).
        field: the form field it concerns, relative to the QA pair (``question``, ``answer``,
            ``span-{j}``, ``step-{j}``, ``distractors``); the HIT view prefixes ``qa-{i}-``.
        message: a human-readable explanation that names the offending value.
    """

    code: str
    severity: str
    field: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"code": self.code, "severity": self.severity, "field": self.field, "message": self.message}


def issue(code: str, field: str, message: str) -> QCIssue:
    """Build an issue with the severity registered for its code.

    Raises:
        KeyError: for a code that is not a QC code of docs/reference/codes.md.
    """
    return QCIssue(code=code, severity=SEVERITY[code], field=field, message=message)


def flags_of(issues: Sequence[QCIssue]) -> list[str]:
    """Distinct codes in first-seen order (the ``flags`` list of ``run_qc`` output)."""
    return list(dict.fromkeys(i.code for i in issues))


_RANK = {FIXED: 0, REVIEW: 1, ERROR: 2}


def severities_of(issues: Sequence[QCIssue | Mapping[str, Any]]) -> dict[str, str]:
    """The severity each code was raised with on one pair: the most severe when raised more than once.

    Why per pair and not per code: one code can carry two severities. ``too_short`` is an error for a
    question under the minimum length and a review flag for the SyllabusQA authors' answer-length rule,
    so a stored pair must say which one it got.

    Args:
        issues: :class:`QCIssue` objects or their ``to_dict()`` form (``run_qc`` output).
    """
    out: dict[str, str] = {}
    for found in issues:
        if isinstance(found, QCIssue):
            code, severity = found.code, found.severity
        else:
            code, severity = str(found["code"]), str(found["severity"])
        if code not in out or _RANK.get(severity, 0) > _RANK.get(out[code], 0):
            out[code] = severity
    return out


def error_flags(flags: Sequence[str], severities: Optional[Mapping[str, str]] = None) -> list[str]:
    """The flags of one pair whose severity is ``error`` (they block automatic approval).

    Args:
        flags: the pair's flag codes.
        severities: the severity each code was raised with on that pair (``QAPair.qc_severity``); a
            code missing from it (pairs checked before severities were stored) takes its registered
            severity from :data:`SEVERITY`.
    """
    severities = severities or {}
    return [f for f in flags if severities.get(f, SEVERITY.get(f)) == ERROR]


_NON_WORD = re.compile(r"[^\w\s]")
_SPACES = re.compile(r"\s+")


def problem_flags(flags: Sequence[str]) -> list[str]:
    """The flags a reviewer should look at: all but the ``fixed`` ones (a normalisation QC already applied,
    e.g. "No, grades are not curved." stored as "No", is how the worker was told to answer, not a fault).
    Unknown codes count as problems."""
    return [f for f in flags if SEVERITY.get(f) != FIXED]


def fold(text: str) -> str:
    """Lowercase, drop punctuation and collapse whitespace: the comparison key for answers/questions."""
    return _SPACES.sub(" ", _NON_WORD.sub(" ", text.lower())).strip()


def word_count(text: str) -> int:
    """Number of whitespace-delimited words holding a letter or digit."""
    return sum(1 for w in text.split() if any(ch.isalnum() for ch in w))


@lru_cache(maxsize=1)
def _better_profanity() -> Any:
    """The better-profanity singleton with its default word list loaded."""
    from better_profanity import profanity

    profanity.load_censor_words()
    return profanity


def profanity_scores(texts: Sequence[str]) -> list[float]:
    """Probability that each text is offensive, from alt-profanity-check's linear SVM model.

    Why this library: SyllabusQA's appendix B names profanity-check; alt-profanity-check is its
    maintained fork with the same model. One vectorised call per batch keeps it fast.
    """
    if not texts:
        return []
    from profanity_check import predict_prob

    return [float(p) for p in predict_prob(list(texts))]


def is_profane(score: float, text: str, threshold: float, use_wordlist: bool) -> bool:
    """Decide profanity from the model score, optionally OR-ed with better-profanity's word list.

    The word list alone is off by default: it flags words such as "sex" that course syllabi use
    legitimately (e.g. "sex differences in biology").
    """
    if score >= threshold:
        return True
    return use_wordlist and bool(_better_profanity().contains_profanity(text))
