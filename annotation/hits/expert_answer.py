"""The expert answer HIT: one crowd question beside its syllabus; type first, then the answer.

Why it looks like this (papers/syllabusqa.txt 2.3, "Agreement among Annotators"): an independent expert
with teaching experience answers randomly sampled test questions "with the same instructions and tutorial
as the annotators" and is asked "to first select the question type before writing the answer
accordingly". So the page reuses the Syllabus HIT's viewer and tutorial, shows the crowd's question but
never the crowd's answer, and keeps the answer box disabled until a type is chosen (``expert.js``; without
JS the form still posts and the server checks the same rules). Form fields: ``question_type`` (one of the
seven SyllabusQA types) and ``answer``. A valid submission becomes one
:class:`annotation.models.ExpertAnswer` row (the fields also stay in ``Assignment.answers``). Answer spans
are not collected: agreement is measured on the answer text only.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, replace
from typing import Any, Optional

from annotation import question_types as qt
from annotation.hits.base import BuiltFrom, Fields, FormCheck, HitHandler
from annotation.hits.syllabus_qa import LABELS, SyllabusQAHandler
from annotation.models import HIT, Assignment, ExpertAnswer
from annotation.qc.common import fold
from annotation.tutorial import TYPED_PAIRS, load_tutorial
from annotation.tutorial_types import Consent, Tutorial

logger = logging.getLogger(__name__)

FIELDS: frozenset[str] = frozenset({"question_type", "answer"})

#: What each type means, for someone classifying a question somebody else wrote.
TYPE_HINTS: dict[str, str] = {
    qt.YES_NO: "The syllabus answers it with yes or no.",
    qt.SINGLE_FACTUAL: "One fact stated in the syllabus answers it.",
    qt.MULTI_FACTUAL: "Several facts stated in the syllabus answer it.",
    qt.SINGLE_REASONING: "One reasoning step from what the syllabus says answers it.",
    qt.MULTI_REASONING: "Several rules or facts of the syllabus must be combined.",
    qt.SUMMARIZATION: "It asks for an overview of part of the syllabus.",
    qt.NO_ANSWER: "The syllabus does not answer it.",
}
#: How to write the answer once the type is chosen (shown under the answer box).
ANSWER_HINTS: dict[str, str] = {
    qt.YES_NO: "Start with Yes or No, then at most a short explanation.",
    qt.SINGLE_FACTUAL: "Answer in a short sentence.",
    qt.MULTI_FACTUAL: "Give every fact the question asks for.",
    qt.SINGLE_REASONING: "Give the conclusion; a short reason may follow.",
    qt.MULTI_REASONING: "Give the conclusion; a short reason may follow.",
    qt.SUMMARIZATION: "Summarise in your own words.",
    qt.NO_ANSWER: f"The answer is fixed: “{qt.NO_ANSWER_TEXT}”.",
}


#: The expert's own consent: the Syllabus HIT's one describes writing 14 pairs in an hour or more, while
#: an expert answers one question. Its typical time is also the shortest limit an expert batch may have.
CONSENT = Consent(
    title="Before you start",
    paragraphs=(
        "In this task you read one question a student asked about a course, shown beside the course "
        "syllabus. You first choose the question's type (one of 7), then write its answer from the "
        "syllabus. The tutorial below is the one the question writers followed; it explains the 7 types "
        "with examples.",
        "We are researchers building tools that answer students' questions about course logistics. Your "
        "answers are compared with the question writers' answers to measure how well people agree, and "
        "become part of a public research dataset that anyone may download and use for research.",
        "We do not publish your crowd platform ID. It is replaced by a pseudonym (a random-looking code) "
        "before anything is shared, and we never ask for your name or contact details. Please do not "
        "write anything about yourself in your answers.",
        "Taking part is voluntary. You can stop at any time by closing the page or returning the task; "
        "answers you have not submitted are not added to the dataset.",
    ),
    agree_label="I have read this and I agree to take part",
    typical_minutes=(5, 20),
)


@functools.lru_cache(maxsize=1)
def _tutorial() -> Tutorial:
    """The Syllabus HIT's tutorial (same instructions and examples, as the paper says) with CONSENT."""
    return replace(load_tutorial(ExpertAnswerHandler.tutorial_name, TYPED_PAIRS), consent=CONSENT)


@dataclass(frozen=True)
class CleanExpertAnswer:
    """A valid expert submission, ready for :meth:`ExpertAnswerHandler.store`."""

    question_type: str
    answer: str


class ExpertAnswerHandler(HitHandler):
    """An expert answers one crowd question (``expert_answer`` batches)."""

    template_name = "hits/expert_answer.html"
    tutorial_name = "syllabus_qa"
    tutorial_layout = TYPED_PAIRS
    built_from = BuiltFrom.RELEASE
    default_title = "Expert answers: choose the question type, then answer from the syllabus"
    expert_only = True
    runs_qc = False

    def tutorial(self) -> Tutorial:
        """The Syllabus HIT's instructions and worked examples with the expert's own :data:`CONSENT`."""
        return _tutorial()

    def accepts_field(self, name: str) -> bool:
        """``question_type`` and ``answer``."""
        return name in FIELDS

    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """The syllabus viewer's pages (the Syllabus HIT's own), the question and the seven types.

        Raises:
            ValueError: the HIT has no QA pair or no document (not made by ``create_expert_batch``).
        """
        if hit.qa_pair is None or hit.document is None:
            raise ValueError(f"HIT({hit.pk}) of an expert batch needs a QA pair and a document")
        viewer = SyllabusQAHandler().context(hit, assignment, token)
        return {
            "document": viewer["document"],
            "pages": viewer["pages"],
            "has_pdf": viewer["has_pdf"],
            "question": hit.qa_pair.question,
            "types": [
                {
                    "value": t,
                    "label": LABELS[t],
                    "hint": TYPE_HINTS[t],
                    "answer_hint": ANSWER_HINTS[t],
                    "id": "type-" + t.replace("/", "-").replace(" ", "-"),
                }
                for t in qt.SYLLABUS_TYPES
            ],
            "no_answer_type": qt.NO_ANSWER,
            "no_answer_text": qt.NO_ANSWER_TEXT,
        }

    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Type required (one of the seven), answer required; the fixed answer for "no answer".

        "No/insufficient information" is accepted for any type (the expert may find the syllabus silent
        on a question the crowd typed otherwise); a "no answer" type with an empty answer gets that text,
        as the page fills it in.
        """
        form = FormCheck(fields=fields)
        qtype = str(fields.get("question_type", "") or "").strip()
        answer = str(fields.get("answer", "") or "").strip()
        if not qtype:
            form.error("question_type", "Choose the question type first.")
        elif qtype not in qt.SYLLABUS_TYPES:
            form.error("question_type", f"Unknown question type {qtype!r}: choose one of the seven types.")
        if qtype == qt.NO_ANSWER:
            if not answer:
                answer = qt.NO_ANSWER_TEXT
            elif fold(answer) != fold(qt.NO_ANSWER_TEXT):
                form.error("answer", f"The answer of a No answer question is “{qt.NO_ANSWER_TEXT}”.")
        elif not answer:
            form.error("answer", "Write an answer.")
        if form.ok:
            form.cleaned = CleanExpertAnswer(
                question_type=qtype, answer=qt.NO_ANSWER_TEXT if qtype == qt.NO_ANSWER else answer
            )
        return form

    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """One ExpertAnswer row for the HIT's crowd pair, inside the submission's transaction."""
        pair_id = assignment.hit.qa_pair_id
        if pair_id is None:
            raise ValueError(f"Assignment({assignment.pk}): its HIT has no QA pair")
        cleaned: CleanExpertAnswer = check.cleaned
        row = ExpertAnswer.objects.create(
            assignment=assignment,
            qa_pair_id=pair_id,
            question_type=cleaned.question_type,
            answer=cleaned.answer,
        )
        logger.info("Assignment(%s): stored ExpertAnswer(%s) for QAPair(%s)", assignment.pk, row.pk, pair_id)
