"""The model verdict validation HIT: a second worker says whether the model in the loop was really wrong.

Why: the model in the loop (:mod:`evaluation.services.model_checks`) calls a pair "fooled" when its
judge finds the model's answer does not match the worker's. A lexical judge over free-text answers
calls many right answers "fooled" (a paraphrase, a longer chunk that holds the answer), so the raw
rate overstates how hard the questions are. Dynabench's answer is a *validated* model error rate: a
second worker looks at each "fooled" example and confirms that the model was wrong and the example is
valid. This page is that step for SyllabusQA's free-text answers over a long document: the syllabus
(the Syllabus HIT's own viewer), the question, the writer's answer and the model's answer, and one
choice.

Form fields (docs/reference/hit-forms.md): ``verdict``, one of :data:`VERDICTS` (``model_wrong``: the
model's answer is wrong, the writer's right; ``model_right``: the model's answer is right too;
``worker_wrong``: the writer's answer is wrong, so the example is no model error), and ``note``
(optional, at most :data:`MAX_NOTE_CHARS`). The fields stay in ``Assignment.answers``; the pair's
:class:`annotation.models.ModelCheck` gets ``validation`` ``confirmed`` when more than half of the
HIT's submitted verdicts say ``model_wrong``, else ``disputed`` (a tie is not a confirmation).
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, replace
from typing import Any, Optional

from annotation import question_types as qt
from annotation.hits.base import BuiltFrom, Fields, FormCheck, HitHandler
from annotation.hits.syllabus_qa import LABELS, SyllabusQAHandler
from annotation.models import HIT, Assignment, ModelCheck
from annotation.tutorial import TYPED_PAIRS, load_tutorial
from annotation.tutorial_types import Consent, Tutorial

logger = logging.getLogger(__name__)

MODEL_WRONG = "model_wrong"
MODEL_RIGHT = "model_right"
WORKER_WRONG = "worker_wrong"
VERDICTS: tuple[str, ...] = (MODEL_WRONG, MODEL_RIGHT, WORKER_WRONG)
"""The values of the ``verdict`` field, in the order the page lists them."""
FIELDS: frozenset[str] = frozenset({"verdict", "note"})
MAX_NOTE_CHARS = 500

#: What each choice says, for an answerable question and for a "no answer" one (whose writer claims the
#: syllabus does not answer it, and whose model "fooled" means it answered anyway).
CHOICES: dict[bool, dict[str, str]] = {
    False: {
        MODEL_WRONG: (
            "The model's answer is wrong or does not answer the question; the student's answer is right."
        ),
        MODEL_RIGHT: (
            "The model's answer is right as well: it answers the question the way the syllabus does."
        ),
        WORKER_WRONG: (
            "The student's answer is wrong (the syllabus says otherwise), or the question makes no sense."
        ),
    },
    True: {
        MODEL_WRONG: "The syllabus does not answer this question, so the model should have said so.",
        MODEL_RIGHT: "The syllabus does answer it, and the model's answer is right.",
        WORKER_WRONG: (
            "The syllabus does answer it, but not as the model says, or the question makes no sense."
        ),
    },
}

CONSENT = Consent(
    title="Before you start",
    paragraphs=(
        "In this task you read one question a student wrote about a course, shown beside the course "
        "syllabus, with two answers to it: the student's and a computer model's. You say whether the "
        "model's answer is wrong, using the syllabus.",
        "We are researchers building tools that answer students' questions about course logistics. Your "
        "choice tells us which questions such tools really get wrong, and becomes part of a public "
        "research dataset that anyone may download and use for research.",
        "We do not publish your crowd platform ID. It is replaced by a pseudonym (a random-looking code) "
        "before anything is shared, and we never ask for your name or contact details. Please do not "
        "write anything about yourself in your note.",
        "Taking part is voluntary. You can stop at any time by closing the page or returning the task; "
        "answers you have not submitted are not added to the dataset.",
    ),
    agree_label="I have read this and I agree to take part",
    typical_minutes=(2, 10),
)


@functools.lru_cache(maxsize=1)
def _tutorial() -> Tutorial:
    """The Syllabus HIT's instructions and examples (what a good answer is) with this task's CONSENT."""
    return replace(load_tutorial(VerdictValidationHandler.tutorial_name, TYPED_PAIRS), consent=CONSENT)


@dataclass(frozen=True)
class CleanVerdict:
    """A valid submission, ready for :meth:`VerdictValidationHandler.store`."""

    verdict: str
    note: str


def validation_of(verdicts: list[str]) -> str:
    """The check's ``validation`` from the submitted verdicts: confirmed on a strict majority of
    ``model_wrong``, else disputed (empty when there are none)."""
    if not verdicts:
        return ModelCheck.Validation.NONE
    wrong = sum(1 for v in verdicts if v == MODEL_WRONG)
    return ModelCheck.Validation.CONFIRMED if 2 * wrong > len(verdicts) else ModelCheck.Validation.DISPUTED


class VerdictValidationHandler(HitHandler):
    """A second worker confirms or disputes one "fooled" verdict (``verdict_validation`` batches)."""

    template_name = "hits/verdict_validation.html"
    tutorial_name = "syllabus_qa"
    tutorial_layout = TYPED_PAIRS
    built_from = BuiltFrom.FOOLED
    default_title = "Is the model's answer wrong? Check two answers to a syllabus question"
    runs_qc = False

    def tutorial(self) -> Tutorial:
        """The Syllabus HIT's tutorial with this task's own :data:`CONSENT`."""
        return _tutorial()

    def accepts_field(self, name: str) -> bool:
        """``verdict`` and ``note``."""
        return name in FIELDS

    @staticmethod
    def _check_of(hit: HIT) -> ModelCheck:
        """The model check the HIT validates.

        Raises:
            ValueError: the HIT has no pair, no syllabus, or its pair no model check.
        """
        if hit.qa_pair is None or hit.document is None:
            raise ValueError(f"HIT({hit.pk}) of a model validation batch needs a QA pair and a document")
        check = ModelCheck.objects.filter(qa_pair=hit.qa_pair_id).first()
        if check is None:
            raise ValueError(f"HIT({hit.pk}): QAPair({hit.qa_pair_id}) has no model check")
        return check

    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """The syllabus viewer's pages, the question, both answers and the three choices.

        Raises:
            ValueError: see :meth:`_check_of`.
        """
        check = self._check_of(hit)
        pair = hit.qa_pair
        viewer = SyllabusQAHandler().context(hit, assignment, token)
        no_answer = pair.question_type == qt.NO_ANSWER
        return {
            "document": viewer["document"],
            "pages": viewer["pages"],
            "has_pdf": viewer["has_pdf"],
            "question": pair.question,
            "question_type": LABELS.get(pair.question_type, pair.question_type),
            "no_answer": no_answer,
            "worker_answer": pair.answer,
            "model_answer": check.model_answer,
            "model_abstained": check.abstained,
            "no_answer_text": qt.NO_ANSWER_TEXT,
            "choices": [{"value": v, "label": CHOICES[no_answer][v], "id": f"verdict-{v}"} for v in VERDICTS],
            "max_note": MAX_NOTE_CHARS,
        }

    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """One of the three verdicts; a note of at most :data:`MAX_NOTE_CHARS` characters."""
        form = FormCheck(fields=fields)
        verdict = str(fields.get("verdict", "") or "").strip()
        note = str(fields.get("note", "") or "").strip()
        if not verdict:
            form.error("verdict", "Say whether the model's answer is wrong.")
        elif verdict not in VERDICTS:
            form.error("verdict", f"Unknown choice {verdict[:40]!r}: choose one of the three.")
        if len(note) > MAX_NOTE_CHARS:
            form.error("note", f"Keep the note short: at most {MAX_NOTE_CHARS} characters.")
        if form.ok:
            form.cleaned = CleanVerdict(verdict=verdict, note=note)
        return form

    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """Set the pair's check's ``validation`` from every submitted verdict of the HIT (this one
        included: it is stored on the assignment already), inside the submission's transaction."""
        model_check = self._check_of(assignment.hit)
        ModelCheck.objects.select_for_update().filter(pk=model_check.pk).order_by("pk").first()
        answers = Assignment.objects.filter(
            hit=assignment.hit_id,
            status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
        ).values_list("answers", flat=True)
        verdicts = [str((a or {}).get("verdict", "")) for a in answers]
        validation = validation_of([v for v in verdicts if v in VERDICTS])
        ModelCheck.objects.filter(pk=model_check.pk).update(validation=validation)
        cleaned: CleanVerdict = check.cleaned
        logger.info(
            "Assignment(%s): %s on ModelCheck(%s) of QAPair(%s); validation now %r",
            assignment.pk,
            cleaned.verdict,
            model_check.pk,
            assignment.hit.qa_pair_id,
            validation,
        )
