"""The Syllabus HIT: one syllabus, 14 QA cards (2 per SyllabusQA question type), spans located by offsets.

Why it looks like this (papers/syllabusqa.txt 2.3 and appendix K): a worker reads one long syllabus and
writes 14 QA pairs, two of each of the seven types, copying answer spans from the syllabus (yes/no,
single and multi factual, summarization) or writing reasoning steps (single and multi reasoning);
adversarial questions get the fixed answer "No/insufficient information". The page shows the syllabus
text page by page, so a selected span is stored with its exact character offsets into
``Document.text`` and its page (hidden fields ``qa-{i}-span-{j}-start/-end/-page``, our extension of
the HIT form contract, docs/reference/hit-forms.md). The server re-checks everything the browser
checked with the one QC implementation (:func:`annotation.qc.syllabusqa.check_pair`) and never trusts the
offsets it is sent: a span whose offsets do not hold its text is located again in the document.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from django.urls import reverse

from annotation import question_types as qt
from annotation.hits.base import BuiltFrom, Fields, FormCheck, HitHandler
from annotation.models import HIT, AnswerSpan, Assignment, Batch, Document, QAPair, ReasoningStep
from annotation.qc.common import ERROR, REVIEW, QCIssue, fold, severities_of
from annotation.qc.syllabusqa import (
    SyllabusQAOptions,
    SyllabusQAPair,
    SyllabusQAResult,
    check_pair,
    find_duplicate_questions,
)
from annotation.screening.quiz import MAX_QUIZ_QUESTIONS
from annotation.services.batches import quiz_answer_field, quiz_questions_for
from annotation.spans import NormalizedDocument, locate_span, normalize_document, normalize_text
from annotation.tutorial import TYPED_PAIRS

logger = logging.getLogger(__name__)

N_CARDS = qt.PAIRS_PER_SYLLABUS_HIT
#: The fixed question type of each card: cards 0-1 yes/no, 2-3 single factual, ... (SYLLABUS_TYPES order).
CARD_TYPES: tuple[str, ...] = tuple(t for t in qt.SYLLABUS_TYPES for _ in range(qt.PAIRS_PER_TYPE))

_FIELD = re.compile(
    r"^qa-(?P<i>\d{1,2})-(?:question_type|question|answer|span-[0-4](?:-(?:start|end|page))?|step-[0-4])$"
)
_QUIZ_FIELD = re.compile(r"^quiz-(?P<k>\d{1,2})-answer$")

#: Longest span text the page may ask to locate (a span is a sentence or a schedule row, not a page).
MAX_LOCATE_CHARS = 2000
#: Widest edit distance used to offer the nearest match of a span that is not in the syllabus.
MAX_NEAREST_EDITS = 12

#: Short instruction line per type (the tutorial's type guides hold the long form).
INSTRUCTIONS: dict[str, str] = {
    qt.YES_NO: "Ask something the syllabus answers with yes or no; start the answer with Yes or No; 1 span.",
    qt.SINGLE_FACTUAL: "Ask for one fact stated in the syllabus; answer in a short sentence; add 1 span.",
    qt.MULTI_FACTUAL: "Ask for several facts stated in the syllabus; add 1 to 5 spans, one per fact.",
    qt.SINGLE_REASONING: "Describe a student's situation; the answer needs 1 reasoning step you write.",
    qt.MULTI_REASONING: "Combine several rules of the syllabus; write 2 to 5 reasoning steps.",
    qt.SUMMARIZATION: "Ask for an overview; summarise in your own words; add 1 to 5 spans you used.",
    qt.NO_ANSWER: "Ask a realistic question the syllabus does NOT answer; the answer is fixed.",
}
LABELS: dict[str, str] = {
    qt.YES_NO: "Yes/No",
    qt.SINGLE_FACTUAL: "Single factual",
    qt.MULTI_FACTUAL: "Multi factual",
    qt.SINGLE_REASONING: "Single reasoning",
    qt.MULTI_REASONING: "Multi reasoning",
    qt.SUMMARIZATION: "Summarization",
    qt.NO_ANSWER: "No answer",
}

#: Stepper labels short enough for a 1366-pixel-wide screen.
SHORT_LABELS: dict[str, str] = {
    qt.YES_NO: "Yes/No",
    qt.SINGLE_FACTUAL: "Factual",
    qt.MULTI_FACTUAL: "Multi-fact",
    qt.SINGLE_REASONING: "Reasoning",
    qt.MULTI_REASONING: "Multi-step",
    qt.SUMMARIZATION: "Summary",
    qt.NO_ANSWER: "No answer",
}


def field_name(card: int, name: str) -> str:
    """The form field ``qa-{card}-{name}`` (docs/reference/hit-forms.md)."""
    return f"qa-{card}-{name}"


@dataclass(frozen=True)
class LocatedSpan:
    """A span as it will be stored: the exact document text at ``[start, end)`` and its 1-based page.

    ``start``/``end``/``page`` are None when the span could not be located (only possible when the
    QC check did not block it, i.e. never for a valid submission).
    """

    position: int
    text: str
    start: Optional[int]
    end: Optional[int]
    page: Optional[int]


@dataclass(frozen=True)
class CleanCard:
    """One card of a valid submission, ready for :meth:`SyllabusQAHandler.store`."""

    position: int
    question_type: str
    question: str
    answer: str
    normalized_answer: str
    spans: tuple[LocatedSpan, ...]
    steps: tuple[str, ...]
    flags: tuple[str, ...]
    severity: dict[str, str] = field(default_factory=dict)


def _int_or_none(value: Any) -> Optional[int]:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def card_spans(fields: Fields, card: int) -> list[tuple[int, str, Optional[int], Optional[int]]]:
    """The non-empty spans of a card as (slot, text, start, end) with the offsets the browser sent."""
    spans = []
    for j in range(qt.MAX_SPANS):
        text = str(fields.get(field_name(card, f"span-{j}"), "") or "")
        if text.strip():
            start = _int_or_none(fields.get(field_name(card, f"span-{j}-start")))
            end = _int_or_none(fields.get(field_name(card, f"span-{j}-end")))
            spans.append((j, text, start, end))
    return spans


def locate_card_spans(
    document: Document,
    fields: Fields,
    card: int,
    result: SyllabusQAResult,
) -> tuple[LocatedSpan, ...]:
    """Where each span of a card is: the browser's offsets when they hold the span, else QC's match.

    Why: QC's :func:`annotation.spans.locate_spans` finds the *first* occurrence of a span, but the worker
    selected a particular one (a date may appear on page 1 and in the schedule on page 3), so offsets
    that verify are kept; a span the worker typed or edited falls back to QC's (repaired) match.
    """
    text = document.text
    # locate_spans skips empty strings but keeps their index, so QC's match index is the slot number.
    matches = {m.index: m for m in result.spans}
    located: list[LocatedSpan] = []
    for position, (slot, span, start, end) in enumerate(card_spans(fields, card)):
        if start is not None and end is not None and 0 <= start < end <= len(text):
            inner = text[start:end]
            if inner.strip() and inner.strip() == span.strip():
                s = start + len(inner) - len(inner.lstrip())
                e = s + len(inner.strip())
                located.append(LocatedSpan(position, text[s:e], s, e, document.page_of(s)))
                continue
        match = matches.get(slot)
        if match is not None and match.found and match.start is not None:
            located.append(
                LocatedSpan(position, match.text, match.start, match.end, document.page_of(match.start))
            )
        else:
            located.append(LocatedSpan(position, span.strip(), None, None, None))
    return tuple(located)


def _message_for(issue: QCIssue, question_type: str, fields: Fields, card: int) -> str:
    """A worker-facing message for a QC issue (QC's own messages are written for researchers)."""
    code = issue.code
    if code == "too_short" and issue.field == "question":
        if not str(fields.get(field_name(card, "question"), "")).strip():
            return "Write a question."
        return "The question is too short: write a full question of at least 3 words."
    if code == "too_short" and issue.severity == REVIEW:
        what = "answer" if issue.field == "answer" else "reasoning step"
        return f"This {what} has fewer than 3 words: check that it says enough."
    if code == "too_short" and issue.field == "answer":
        return "Write an answer."
    if code == "span_count":
        low, high = qt.SPAN_COUNTS[question_type]
        if high == 0:
            return "This question type takes no answer spans: remove them."
        want = f"exactly {low} answer span" if low == high else f"{low} to {high} answer spans"
        return f"Add {want} copied from the syllabus (select text on the left, then press Add selected text)."
    if code == "reasoning_step_count":
        low, high = qt.step_counts(question_type)
        if high == 0:
            return "This question type takes no reasoning steps: remove them."
        want = f"exactly {low} reasoning step" if low == high else f"{low} to {high} reasoning steps"
        return f"Write {want}."
    if code == "span_not_in_document":
        number = int(issue.field.rsplit("-", 1)[-1]) + 1
        return f"Span {number} is not in the syllabus: select the text in the syllabus and add it again."
    if code == "yes_no_answer_not_single_word":
        return 'Start the answer with "Yes" or "No".'
    if code == "pii_request":
        return "This question asks for personal information about course staff; such questions are dropped."
    if code == "profanity":
        return "Please keep the language polite: this text may be offensive."
    return issue.message


class SyllabusQAHandler(HitHandler):
    """Syllabus QA writing (and screening): 14 QA cards about one syllabus."""

    template_name = "hits/syllabus_qa.html"
    tutorial_name = "syllabus_qa"
    tutorial_layout = TYPED_PAIRS
    built_from = BuiltFrom.DOCUMENTS
    default_title = "Write 14 questions and answers about a course syllabus"
    pairs_per_assignment = qt.PAIRS_PER_SYLLABUS_HIT
    model_in_the_loop = True
    verdict_validation_kind = Batch.Kind.VERDICT_VALIDATION
    gold_quiz = True
    #: the heading of the known-answer questions above the cards, and what a missing answer says.
    quiz_heading = "Questions about this syllabus"
    quiz_missing = "Answer question {number} about the syllabus."
    #: how the page asks for the answers: copied syllabus words are what the lexical grader recognises
    #: (benchmarks/syllabus_gold.py: answers in one's own words are graded right less than a fifth of the
    #: time, copied ones almost always), and here the grade acts on the worker.
    quiz_instruction = "copy the words of the syllabus that answer it (a sentence or a phrase)"

    def __init__(self, options: Optional[SyllabusQAOptions] = None) -> None:
        self.options = options or SyllabusQAOptions()

    def locate_span(self, document: Document, text: str) -> dict[str, Any]:
        """Where a span the worker typed or pasted sits in the syllabus (the page's span field asks).

        The same locator as QC (:func:`annotation.spans.locate_span`, with QC's edit budget), so the page
        says "found" exactly when the submission will pass. When it is not found, the nearest syllabus
        text within a wider budget (a quarter of the span's length, at most :data:`MAX_NEAREST_EDITS`)
        is offered instead.

        Returns:
            ``{"status", "text", "start", "end", "page"}`` when found (``status`` is ``exact``,
            ``normalized`` or ``repaired``; ``text`` is the syllabus's own text), else
            ``{"status": "not_found", "nearest": {...} or None}``.
        """
        text = text[:MAX_LOCATE_CHARS]
        doc = normalize_document(document.text)

        def found(match: Any) -> dict[str, Any]:
            return {
                "status": match.status,
                "text": match.text,
                "start": match.start,
                "end": match.end,
                "page": document.page_of(match.start),
            }

        match = locate_span(0, text, doc, self.options.max_span_edits)
        if match.found and match.start is not None:
            return found(match)
        wider = min(MAX_NEAREST_EDITS, len(normalize_text(text)) // 4)
        nearest = locate_span(0, text, doc, wider) if wider > self.options.max_span_edits else None
        return {
            "status": "not_found",
            "nearest": found(nearest) if nearest is not None and nearest.found else None,
        }

    def accepts_field(self, name: str) -> bool:
        """``qa-{i}-question_type|question|answer|span-{j}[-start|-end|-page]|step-{j}`` for i < 14, j < 5,
        and ``quiz-{k}-answer`` for k < ``MAX_QUIZ_QUESTIONS`` (kept only where the HIT asks question k:
        :meth:`check`)."""
        quiz = _QUIZ_FIELD.match(name)
        if quiz:
            return int(quiz.group("k")) < MAX_QUIZ_QUESTIONS
        match = _FIELD.match(name)
        return bool(match) and int(match.group("i")) < N_CARDS

    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """The syllabus pages (text, offsets, image links) and the 14 cards' field names and rules."""
        document = hit.document
        if document is None:
            raise ValueError(f"HIT({hit.pk}) of a syllabus batch has no document")
        pages = []
        for number in range(1, document.num_pages + 1):
            start, end = document.page_bounds(number)
            image = ""
            if document.pdf:
                image = reverse("hits:page-image", kwargs={"token": token, "pk": document.pk, "page": number})
            pages.append(
                {
                    "number": number,
                    "start": start,
                    "end": end,
                    "text": document.text[start:end],
                    "image": image,
                }
            )
        cards = []
        for i, qtype in enumerate(CARD_TYPES):
            span_min, span_max = qt.SPAN_COUNTS[qtype]
            step_min, step_max = qt.step_counts(qtype)
            cards.append(
                {
                    "index": i,
                    "number": i + 1,
                    "type": qtype,
                    "label": LABELS[qtype],
                    "short": SHORT_LABELS[qtype],
                    "guide": qtype.replace("/", "-").replace(" ", "-"),
                    "instruction": INSTRUCTIONS[qtype],
                    "no_answer": qtype == qt.NO_ANSWER,
                    "yes_no": qtype == qt.YES_NO,
                    "span_min": span_min,
                    "span_max": span_max,
                    "step_min": step_min,
                    "step_max": step_max,
                    "names": {
                        "question_type": field_name(i, "question_type"),
                        "question": field_name(i, "question"),
                        "answer": field_name(i, "answer"),
                    },
                    "spans": [
                        {
                            "j": j,
                            "number": j + 1,
                            "name": field_name(i, f"span-{j}"),
                            "start": field_name(i, f"span-{j}-start"),
                            "end": field_name(i, f"span-{j}-end"),
                            "page": field_name(i, f"span-{j}-page"),
                        }
                        for j in range(span_max)
                    ],
                    "steps": [
                        {"j": j, "number": j + 1, "name": field_name(i, f"step-{j}")} for j in range(step_max)
                    ],
                }
            )
        return {
            "document": document,
            "pages": pages,
            "has_pdf": bool(document.pdf),
            "cards": cards,
            "quiz": [
                {"k": k, "number": k + 1, "question": q.question, "name": quiz_answer_field(k)}
                for k, q in enumerate(quiz_questions_for(hit))
            ],
            "quiz_heading": self.quiz_heading,
            "quiz_instruction": self.quiz_instruction,
            "no_answer_text": qt.NO_ANSWER_TEXT,
            "min_question_words": self.options.min_question_words,
        }

    def _pair(self, document: Document, fields: Fields, card: int) -> SyllabusQAPair:
        return SyllabusQAPair(
            id=f"card {card + 1}",
            syllabus_name=document.name,
            question_type=CARD_TYPES[card],
            question=str(fields.get(field_name(card, "question"), "") or ""),
            answer=str(fields.get(field_name(card, "answer"), "") or ""),
            answer_spans=tuple(
                str(fields.get(field_name(card, f"span-{j}"), "") or "") for j in range(qt.MAX_SPANS)
            ),
            reasoning_steps=tuple(
                str(fields.get(field_name(card, f"step-{j}"), "") or "") for j in range(qt.MAX_STEPS)
            ),
        )

    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Contract checks (14 cards in the fixed type order, fixed no-answer text), then QC per card.

        QC errors block and are shown next to their field (``qa-{i}-question``, ``qa-{i}-span-{j}``...);
        possible PII is shown as a warning; duplicate questions within the submission are an error on
        the later card. Profanity is left to the after-submission QC job (a review flag on the stored
        pair): its model loads scikit-learn, which a web worker must not wait for or hold.
        """
        form = FormCheck(fields=fields)
        document = hit.document
        if document is None:
            raise ValueError(f"HIT({hit.pk}) of a syllabus batch has no document")
        self._check_quiz(hit, form)
        normalized: NormalizedDocument = normalize_document(document.text)
        pairs: list[SyllabusQAPair] = []
        results: list[SyllabusQAResult] = []
        for i, qtype in enumerate(CARD_TYPES):
            sent_type = str(fields.get(field_name(i, "question_type"), "") or "")
            if sent_type != qtype:
                form.error(
                    field_name(i, "question_type"),
                    f"Card {i + 1} must be a {LABELS[qtype]} question (got {sent_type or 'nothing'!r}).",
                )
            pair = self._pair(document, fields, i)
            answer = pair.answer.strip()
            if qtype == qt.NO_ANSWER and answer and fold(answer) != fold(qt.NO_ANSWER_TEXT):
                form.error(
                    field_name(i, "answer"), f'The answer of a No answer question is "{qt.NO_ANSWER_TEXT}".'
                )
            pairs.append(pair)
        page_options = replace(self.options, check_profanity=False)
        for i, qtype in enumerate(CARD_TYPES):
            result = check_pair(pairs[i], normalized, page_options)
            results.append(result)
            for found in result.issues:
                name = field_name(i, found.field)
                message = _message_for(found, qtype, fields, i)
                if found.severity == ERROR:
                    form.error(name, message)
                elif found.severity == REVIEW:
                    form.warn(name, message)
        for later, first in find_duplicate_questions(pairs, self.options.duplicate_threshold).items():
            form.error(
                field_name(later, "question"),
                f"This question repeats card {first + 1}: write a different question.",
            )
        if form.ok:
            form.cleaned = [
                CleanCard(
                    position=i,
                    question_type=CARD_TYPES[i],
                    question=pairs[i].question.strip(),
                    answer=qt.NO_ANSWER_TEXT if CARD_TYPES[i] == qt.NO_ANSWER else pairs[i].answer.strip(),
                    normalized_answer=results[i].normalized_answer,
                    spans=locate_card_spans(document, fields, i, results[i]),
                    steps=tuple(s.strip() for s in pairs[i].reasoning_steps if s and s.strip()),
                    flags=results[i].flags,
                    severity=severities_of(results[i].issues),
                )
                for i in range(N_CARDS)
            ]
        return form

    def _check_quiz(self, hit: HIT, form: FormCheck) -> None:
        """An answer to every known-answer question the HIT shows; answers to questions it does not show
        are dropped from the submission, so a HIT without them stores exactly the form contract
        (docs/reference/hit-forms.md)."""
        asked = len(quiz_questions_for(hit))
        for name in [n for n in form.fields if _QUIZ_FIELD.match(n)]:
            match = _QUIZ_FIELD.match(name)
            if match and int(match.group("k")) >= asked:
                del form.fields[name]
        for k in range(asked):
            if not str(form.fields.get(quiz_answer_field(k), "") or "").strip():
                form.error(quiz_answer_field(k), self.quiz_missing.format(number=k + 1))

    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """One QAPair per card with its spans (exact offsets, page) and steps, in the view's transaction."""
        document = assignment.hit.document
        if document is None:
            raise ValueError(f"Assignment({assignment.pk}): its HIT has no document")
        cards: list[CleanCard] = check.cleaned
        for card in cards:
            pair = QAPair.objects.create(
                corpus_id=document.corpus_id,
                document=document,
                assignment=assignment,
                position=card.position,
                question_type=card.question_type,
                question=card.question,
                answer=card.answer,
                normalized_answer=card.normalized_answer,
                qc_flags=list(card.flags),
                qc_severity=card.severity,
            )
            AnswerSpan.objects.bulk_create(
                AnswerSpan(
                    qa_pair=pair, position=s.position, text=s.text, start=s.start, end=s.end, page=s.page
                )
                for s in card.spans
            )
            ReasoningStep.objects.bulk_create(
                ReasoningStep(qa_pair=pair, position=p, text=t) for p, t in enumerate(card.steps)
            )
        logger.info(
            "Assignment(%s): stored %d QA pairs on Document(%s)", assignment.pk, len(cards), document.pk
        )


class ScreeningHandler(SyllabusQAHandler):
    """The screening HIT: the syllabus QA HIT plus a short quiz on the same syllabus.

    The quiz questions (``annotation.services.batches.add_quiz``) come from the syllabus's reference pairs;
    their ``quiz-{k}-answer`` fields are graded after submission (``annotation.screening.grader``), as
    advice for the researcher who approves the worker. A syllabus QA batch shows the same questions only
    when the researcher asked for known-answer questions (``launch_batch --quiz``, ``attach_gold
    --questions``), where they count as gold. An approved screening assignment qualifies its worker for
    the batches that require this one.
    """

    default_title = "Screening: write 14 questions and answers about a course syllabus"
    has_quiz = True
    gold_quiz = False
    qualifies_workers = True
    #: a screening HIT measures the worker, so no model helps them.
    model_in_the_loop = False
    verdict_validation_kind = None
    quiz_heading = "Screening questions"
    quiz_missing = "Answer screening question {number}."
    quiz_instruction = "answer in a short sentence, using the syllabus on the left"
