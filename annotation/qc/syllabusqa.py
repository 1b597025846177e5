"""Heuristic QC of SyllabusQA-style QA pairs (Fernandez et al. 2024, section 2.3 and appendix B).

Why: the paper drops questions asking for instructors'/TAs' personal information (the syllabi are
anonymised), normalises yes/no answers to one word, uses "No/insufficient information" for adversarial
questions, screens for profanity with profanity-check, caps QA pairs per annotator, and requires copied
answer spans (1 / 1 / up to 5 / up to 5) or reasoning steps (1 / up to 5) per question type. Every
check here returns its code (docs/reference/codes.md); :func:`check_pairs` collects all of them.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from annotation import question_types as qt
from annotation.importers.syllabusqa_csv import QARow
from annotation.qc.common import (
    ERROR,
    REVIEW,
    QCIssue,
    flags_of,
    fold,
    is_profane,
    issue,
    profanity_scores,
    word_count,
)
from annotation.spans import NOT_FOUND, NormalizedDocument, SpanMatch, locate_spans, normalize_document

logger = logging.getLogger(__name__)

QUESTION_TYPES: tuple[str, ...] = qt.SYLLABUS_TYPES
SPAN_LIMITS: dict[str, tuple[int, int]] = {t: n for t, n in qt.SPAN_COUNTS.items() if n != (0, 0)}
STEP_LIMITS: dict[str, tuple[int, int]] = dict(qt.STEP_COUNTS)
NO_ANSWER = qt.NO_ANSWER_TEXT

_PERSON = (
    r"(?:instructors?|professors?|prof|teachers?|tas?|t\.a\.s?|ta's|teaching assistants?|lecturers?|dr\.?"
    r"|graders?|tutors?)"
)
_PII_PATTERNS: tuple[re.Pattern[str], ...] = (
    # "Who is the TA?", "Who teaches this course?" ask for a name.
    re.compile(
        rf"\bwho\s+(?:is|are|will\s+be|was)\s+(?:the|my|our|this\s+course'?s?|the\s+course'?s?)\s+{_PERSON}\b"
    ),
    re.compile(r"\bwho\s+(?:teaches|is\s+teaching|will\s+teach)\b"),
    # "What is the professor's email / phone number / name / home address?"
    re.compile(
        rf"\b(?:what|what's|whats|which|give|tell|list|provide)\b[^?]{{0,60}}\b{_PERSON}\b[^?]{{0,30}}"
        r"\b(?:name|e-?mail(?:\s+address)?|phone(?:\s+number)?|cell|mobile|home\s+address|address|age|"
        r"birthday|date\s+of\s+birth|pronouns|social\s+media|linkedin|instagram|twitter|facebook)\b"
    ),
    re.compile(
        r"\b(?:what|what's|whats|which)\b[^?]{0,30}\b(?:name|e-?mail(?:\s+address)?|phone(?:\s+number)?|"
        rf"cell|mobile|home\s+address|age|birthday)\b[^?]{{0,20}}\bof\s+(?:the|my|our)\s+{_PERSON}\b"
    ),
    # Personal life: "Is the professor married?", "How old is the TA?"
    re.compile(
        rf"\b{_PERSON}\b[^?]{{0,40}}\b(?:married|wife|husband|kids|children|salary|religion|live|lives)\b"
    ),
    re.compile(rf"\bhow\s+old\s+is\s+(?:the|my|our)\s+{_PERSON}\b"),
)
_YES = frozenset(("yes", "yeah", "yep", "yup", "y", "correct", "true", "sure", "absolutely", "definitely"))
_NO = frozenset(("no", "nope", "nah", "n", "false", "incorrect", "not"))


@dataclass(frozen=True)
class SyllabusQAPair:
    """One SyllabusQA-style QA pair (a ``run_qc`` input line, or one block of the Syllabus HIT form).

    Attributes:
        id: the pair's id.
        syllabus_name: the syllabus (document) it is about.
        question_type: one of :data:`QUESTION_TYPES`.
        question: the question text.
        answer: the answer text (may be empty for ``no answer``).
        answer_spans: spans copied from the syllabus (empty strings allowed, ignored).
        reasoning_steps: written reasoning steps (empty strings allowed, ignored).
        worker_id: the annotator's pseudonym, for cap checks (None when unknown).
    """

    id: str
    syllabus_name: str
    question_type: str
    question: str
    answer: str
    answer_spans: tuple[str, ...] = ()
    reasoning_steps: tuple[str, ...] = ()
    worker_id: Optional[str] = None

    @classmethod
    def from_qa_row(cls, row: QARow) -> SyllabusQAPair:
        """A pair from one row of a SyllabusQA split file, the input the QC benchmarks and tests read."""
        return cls(
            id=row.id,
            syllabus_name=row.syllabus_name,
            question_type=row.question_type,
            question=row.question,
            answer=row.answer,
            answer_spans=row.spans,
            reasoning_steps=row.steps,
        )


@dataclass(frozen=True)
class SyllabusQAOptions:
    """Thresholds of SyllabusQA QC.

    Attributes:
        max_span_edits: near-miss spans within this many characters are repaired (after case and
            whitespace folding).
        min_question_words: shorter questions are ``too_short`` (an error the worker must fix).
        min_answer_words: answers (except yes/no and no-answer ones) and reasoning steps with fewer words
            are ``too_short`` for review: the SyllabusQA authors' length rule (quality_control_v2.py,
            ``len(text.split(" ")) < 3``), counted as they count.
        duplicate_threshold: rapidfuzz ``ratio`` (0-100) on folded questions at or above which two
            questions on the same syllabus are near-duplicates.
        profanity_threshold: alt-profanity-check probability at or above which text is profane.
        profanity_wordlist: also flag better-profanity word-list hits.
        check_profanity: score profanity at all. The HIT page turns it off: the model loads
            scikit-learn, which web workers never import, and profanity is a review flag (never an error
            the worker must fix), so the after-submission QC job adds it to the stored pair.
        max_pairs_per_syllabus: per-annotator cap on one syllabus (None: no cap).
        max_pairs_total: per-annotator cap over all syllabi (None: no cap).
    """

    max_span_edits: int = 2
    min_question_words: int = 3
    min_answer_words: int = 3
    duplicate_threshold: float = 90.0
    profanity_threshold: float = 0.8
    profanity_wordlist: bool = False
    check_profanity: bool = True
    max_pairs_per_syllabus: Optional[int] = None
    max_pairs_total: Optional[int] = None


@dataclass(frozen=True)
class SyllabusQAResult:
    """QC outcome for one pair: the ``run_qc`` output line plus details for forms and reviewers.

    Attributes:
        id: the pair's id.
        flags: distinct codes, in the order found.
        normalized_answer: the answer after yes/no and adversarial normalisation (original kept on the pair).
        spans: where each copied span sits in the syllabus (repaired text and offsets).
        issues: every finding with severity, field and message.
    """

    id: str
    flags: tuple[str, ...]
    normalized_answer: str
    spans: tuple[SpanMatch, ...] = ()
    issues: tuple[QCIssue, ...] = field(default_factory=tuple)

    @property
    def errors(self) -> tuple[QCIssue, ...]:
        """Issues the worker must fix at submit time."""
        return tuple(i for i in self.issues if i.severity == ERROR)

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "flags", "normalized_answer", "answer_spans", "issues"}`` for JSON output."""
        return {
            "id": self.id,
            "flags": list(self.flags),
            "normalized_answer": self.normalized_answer,
            "answer_spans": [s.to_dict() for s in self.spans],
            "issues": [i.to_dict() for i in self.issues],
        }


def is_pii_request(question: str) -> bool:
    """True when the question asks for an instructor's or TA's personal information.

    Asking *about* a person's role or policy ("When are the TA's office hours?", "Can I email the
    professor?") is fine; asking *for* their name, e-mail, phone, address or private life is not.
    """
    text = " ".join(question.lower().replace("’", "'").split())
    return any(p.search(text) for p in _PII_PATTERNS)


def normalize_yes_no(answer: str) -> Optional[str]:
    """ "Yes"/"No" from an answer's first word ("Yes, you can ..." -> "Yes"), or None if neither."""
    words = fold(answer).split()
    if not words:
        return None
    if words[0] in _YES:
        return "Yes"
    if words[0] in _NO:
        return "No"
    return None


def text_columns(pair: SyllabusQAPair) -> dict[str, str]:
    """The pair's non-empty texts by form field (``question``, ``answer``, ``span-{j}``, ``step-{j}``).

    Profanity is scored per column, as the SyllabusQA authors' QC script scores each text column.
    """
    columns = {"question": pair.question, "answer": pair.answer}
    columns.update({f"span-{j}": text for j, text in enumerate(pair.answer_spans)})
    columns.update({f"step-{j}": text for j, text in enumerate(pair.reasoning_steps)})
    return {name: text for name, text in columns.items() if text and text.strip()}


def profanity_by_column(pairs: Sequence[SyllabusQAPair]) -> list[dict[str, float]]:
    """alt-profanity-check probabilities of every text column of every pair, in one vectorised call."""
    columns = [text_columns(pair) for pair in pairs]
    scores = iter(profanity_scores([text for texts in columns for text in texts.values()]))
    return [{name: next(scores) for name in texts} for texts in columns]


def authors_word_count(text: str) -> int:
    """Words as the SyllabusQA authors' QC script counts them: ``len(text.split(" "))``."""
    return len(text.split(" "))


def _count_check(kind: str, code: str, field_name: str, count: int, limits: tuple[int, int]) -> list[QCIssue]:
    low, high = limits
    if low <= count <= high:
        return []
    expected = str(low) if low == high else f"{low}-{high}"
    return [issue(code, field_name, f"{count} {kind} given, expected {expected}")]


def _profanity_issues(
    pair: SyllabusQAPair, options: SyllabusQAOptions, profanity_score: Optional[float | Mapping[str, float]]
) -> list[QCIssue]:
    """One ``profanity`` issue per text column that scores over the threshold (or is on the word list)."""
    texts = text_columns(pair)
    if profanity_score is None:
        scores: Mapping[str, float] = profanity_by_column([pair])[0]
    elif isinstance(profanity_score, Mapping):
        scores = profanity_score
    else:
        scores = dict.fromkeys(texts, float(profanity_score))
    issues = []
    for name, text in texts.items():
        score = scores.get(name, 0.0)
        if is_profane(score, text, options.profanity_threshold, options.profanity_wordlist):
            issues.append(issue("profanity", name, f"offensive language (score {score:.2f})"))
    return issues


def _span_issues(
    pair: SyllabusQAPair,
    spans: list[str],
    document: Optional[str | NormalizedDocument],
    options: SyllabusQAOptions,
) -> tuple[list[SpanMatch], list[QCIssue]]:
    """The answer spans located in the syllabus, and a ``span_not_in_document`` issue for each one missing."""
    if not spans:
        return [], []
    if document is None:
        logger.warning("QA pair %s: syllabus %r not given; span check skipped", pair.id, pair.syllabus_name)
        return [], []
    matches = locate_spans(pair.answer_spans, document, options.max_span_edits)
    issues = [
        issue(
            "span_not_in_document",
            f"span-{match.index}",
            f"answer span {match.index + 1} not found in syllabus {pair.syllabus_name!r}: "
            f"{match.original[:80]!r}",
        )
        for match in matches
        if match.status == NOT_FOUND
    ]
    return matches, issues


def _answer_form(qtype: str, answer: str) -> tuple[str, list[QCIssue]]:
    """The normalised answer of a yes/no or no-answer question, with the issues its form raises."""
    if qtype == "yes/no":
        yes_no = normalize_yes_no(answer)
        if yes_no is None:
            # Not fixable by normalisation, so the worker must fix it: an error, not a "fixed" flag.
            message = f"answer does not start with yes/no: {answer[:80]!r}"
            return answer, [QCIssue("yes_no_answer_not_single_word", ERROR, "answer", message)]
        if word_count(answer) > 1:
            return yes_no, [
                issue("yes_no_answer_not_single_word", "answer", f"normalised {answer[:80]!r} to {yes_no!r}")
            ]
        return yes_no, []
    if qtype == "no answer":
        if answer and fold(answer) != fold(NO_ANSWER):
            return NO_ANSWER, [
                issue("adversarial_answer", "answer", f"normalised {answer[:80]!r} to {NO_ANSWER!r}")
            ]
        return NO_ANSWER, []
    return answer, []


def _length_issues(
    pair: SyllabusQAPair, qtype: str, answer: str, options: SyllabusQAOptions
) -> list[QCIssue]:
    """``too_short`` issues of the question, the answer and each reasoning step."""
    issues: list[QCIssue] = []
    if word_count(pair.question) < options.min_question_words:
        issues.append(
            issue("too_short", "question", f"question has fewer than {options.min_question_words} words")
        )
    if qtype != "no answer" and not answer:
        issues.append(issue("too_short", "answer", "answer is empty"))
    elif qtype not in ("yes/no", "no answer") and authors_word_count(pair.answer) < options.min_answer_words:
        message = f"answer has fewer than {options.min_answer_words} words: {answer[:80]!r}"
        issues.append(QCIssue("too_short", REVIEW, "answer", message))
    for j, step in enumerate(pair.reasoning_steps):
        if step and step.strip() and authors_word_count(step) < options.min_answer_words:
            message = f"reasoning step {j + 1} has fewer than {options.min_answer_words} words: {step[:80]!r}"
            issues.append(QCIssue("too_short", REVIEW, f"step-{j}", message))
    return issues


def check_pair(
    pair: SyllabusQAPair,
    document: Optional[str | NormalizedDocument],
    options: Optional[SyllabusQAOptions] = None,
    profanity_score: Optional[float | Mapping[str, float]] = None,
) -> SyllabusQAResult:
    """Run every single-pair check (all but ``duplicate_question`` and ``annotator_cap_exceeded``).

    Args:
        pair: the QA pair.
        document: the syllabus text (or its normalised form); None skips the span check with a warning.
        options: thresholds.
        profanity_score: precomputed alt-profanity-check probabilities by column
            (:func:`profanity_by_column`; batch callers pass them), one score for every column, or None
            to compute them here.

    Returns:
        The result, with repaired spans and the normalised answer.

    Raises:
        ValueError: for an unknown question type (the message names the pair id and value).
    """
    options = options or SyllabusQAOptions()
    qtype = pair.question_type.strip().lower()
    if qtype not in QUESTION_TYPES:
        raise ValueError(
            f"QA pair {pair.id}: question_type {pair.question_type!r} is not one of {QUESTION_TYPES}"
        )
    issues: list[QCIssue] = []
    answer = pair.answer.strip()

    if is_pii_request(pair.question):
        issues.append(
            issue("pii_request", "question", f"question asks for personal information: {pair.question!r}")
        )
    if options.check_profanity:
        issues += _profanity_issues(pair, options, profanity_score)

    spans = [s for s in pair.answer_spans if s and s.strip()]
    steps = [s for s in pair.reasoning_steps if s and s.strip()]
    issues += _count_check("answer spans", "span_count", "span-0", len(spans), SPAN_LIMITS.get(qtype, (0, 0)))
    issues += _count_check(
        "reasoning steps", "reasoning_step_count", "step-0", len(steps), STEP_LIMITS.get(qtype, (0, 0))
    )
    matches, found = _span_issues(pair, spans, document, options)
    issues += found
    normalized, form = _answer_form(qtype, answer)
    issues += form
    issues += _length_issues(pair, qtype, answer, options)

    return SyllabusQAResult(
        id=pair.id,
        flags=tuple(flags_of(issues)),
        normalized_answer=normalized,
        spans=tuple(matches),
        issues=tuple(issues),
    )


def find_duplicate_questions(pairs: Sequence[SyllabusQAPair], threshold: float = 90.0) -> dict[int, int]:
    """Near-duplicate questions on the same syllabus: index of each later copy -> index of the first.

    Args:
        pairs: the pairs, in submission order (the earliest copy is kept unflagged).
        threshold: rapidfuzz ``ratio`` on folded questions at or above which two are duplicates.

    Returns:
        Mapping from the index of each duplicate to the index of the question it repeats.
    """
    from rapidfuzz import fuzz  # here, not at the top: web workers import this module and never call this
    from rapidfuzz.process import cdist

    by_syllabus: dict[str, list[int]] = defaultdict(list)
    for i, pair in enumerate(pairs):
        by_syllabus[pair.syllabus_name].append(i)
    duplicates: dict[int, int] = {}
    for indices in by_syllabus.values():
        if len(indices) < 2:
            continue
        folded = [fold(pairs[i].question) for i in indices]
        scores = cdist(folded, folded, scorer=fuzz.ratio, score_cutoff=threshold, workers=1)
        for a in range(len(indices)):
            for b in range(a):
                if scores[a][b] >= threshold and folded[a]:
                    duplicates[indices[a]] = indices[b]
                    break
    return duplicates


def find_cap_excess(
    pairs: Sequence[SyllabusQAPair],
    max_per_syllabus: Optional[int],
    max_total: Optional[int],
    prior_per_syllabus: Optional[Mapping[tuple[str, str], int]] = None,
    prior_total: Optional[Mapping[str, int]] = None,
) -> dict[int, str]:
    """Pairs beyond an annotator's caps, counting in order after the pairs already stored.

    Args:
        pairs: pairs in submission order; those without ``worker_id`` are not counted.
        max_per_syllabus: cap per (worker, syllabus), or None.
        max_total: cap per worker over all syllabi, or None.
        prior_per_syllabus: pairs already accepted per (worker, syllabus).
        prior_total: pairs already accepted per worker.

    Returns:
        Mapping from pair index to a message naming the cap exceeded.
    """
    per_syllabus: Counter[tuple[str, str]] = Counter(prior_per_syllabus or {})
    total: Counter[str] = Counter(prior_total or {})
    excess: dict[int, str] = {}
    for i, pair in enumerate(pairs):
        if pair.worker_id is None:
            continue
        key = (pair.worker_id, pair.syllabus_name)
        per_syllabus[key] += 1
        total[pair.worker_id] += 1
        if max_per_syllabus is not None and per_syllabus[key] > max_per_syllabus:
            excess[i] = (
                f"worker {pair.worker_id} exceeds {max_per_syllabus} pairs on syllabus {pair.syllabus_name!r}"
            )
        elif max_total is not None and total[pair.worker_id] > max_total:
            excess[i] = f"worker {pair.worker_id} exceeds {max_total} pairs in total"
    return excess


def check_pairs(
    pairs: Iterable[SyllabusQAPair],
    documents: Mapping[str, str | NormalizedDocument],
    options: Optional[SyllabusQAOptions] = None,
    prior_per_syllabus: Optional[Mapping[tuple[str, str], int]] = None,
    prior_total: Optional[Mapping[str, int]] = None,
) -> list[SyllabusQAResult]:
    """Run all SyllabusQA checks over a batch, including duplicates and annotator caps.

    Args:
        pairs: the QA pairs (order matters for duplicates and caps: earlier ones win).
        documents: syllabus text (or normalised documents) by ``syllabus_name``.
        options: thresholds and caps.
        prior_per_syllabus: counts already stored per (worker, syllabus), for caps.
        prior_total: counts already stored per worker, for caps.

    Returns:
        One result per pair, in input order.
    """
    options = options or SyllabusQAOptions()
    pairs = list(pairs)
    normalized_docs = {
        name: doc if isinstance(doc, NormalizedDocument) else normalize_document(doc)
        for name, doc in documents.items()
    }
    scores = profanity_by_column(pairs)
    results = [
        check_pair(p, normalized_docs.get(p.syllabus_name), options, s)
        for p, s in zip(pairs, scores, strict=True)
    ]
    extra: dict[int, list[QCIssue]] = defaultdict(list)
    for i, first in find_duplicate_questions(pairs, options.duplicate_threshold).items():
        extra[i].append(
            issue("duplicate_question", "question", f"near-duplicate of QA pair {pairs[first].id}")
        )
    caps = find_cap_excess(
        pairs, options.max_pairs_per_syllabus, options.max_pairs_total, prior_per_syllabus, prior_total
    )
    for i, message in caps.items():
        extra[i].append(issue("annotator_cap_exceeded", "question", message))
    for i, issues in extra.items():
        old = results[i]
        merged = old.issues + tuple(issues)
        results[i] = SyllabusQAResult(
            old.id, tuple(flags_of(merged)), old.normalized_answer, old.spans, merged
        )
    return results
