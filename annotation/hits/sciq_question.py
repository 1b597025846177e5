"""SciQ stage 1: the worker picks one of three passages (or rejects all three) and writes a question.

Why: papers/sciq-crowdsourcing-mcq.txt 3.1 shows each worker three filtered textbook passages so that
they can skip unsuitable ones, asks for a question of 6-30 words that is not a yes/no question with an
answer of at most 3 words, and never reuses a chosen passage. The rules themselves live in
:mod:`annotation.qc.sciq`; this handler only maps their findings onto the form's fields.

Form fields (docs/reference/hit-forms.md): ``passage`` (a passage id of this HIT, or ``none``),
``question``, ``answer``; plus this page's extension ``reject_reason`` (optional, with ``none``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

from django.db.models import F

from annotation import hit_passages
from annotation import question_types as qt
from annotation.hits.base import BuiltFrom, Fields, FormCheck, HitConflict, HitHandler
from annotation.models import HIT, Assignment, Batch, Passage, QAPair
from annotation.qc.common import ERROR, REVIEW, severities_of
from annotation.qc.sciq import SciQItem, SciQOptions, check_item
from annotation.sql_writes import BoundWrite, SqlInsert, SqlUpdate
from annotation.tutorial import PASSAGE_QUESTIONS

logger = logging.getLogger(__name__)

NONE_SUITABLE = "none"
"""The ``passage`` value that rejects all three passages."""

QC_OPTIONS = SciQOptions(check_distractors=False)

HINTS: dict[str, str] = {
    "question_length": "Aim for one complete sentence of 6 to 30 words.",
    "answer_length": "Shorter is better: a word or a short phrase from the passage.",
    "yes_no_question": "Ask what, which, how, why... so that the answer is a word or phrase, not yes or no.",
    "answer_in_question": "Rephrase the question so that it does not contain its own answer.",
    "answer_not_in_passage": "Check the spelling, or copy the answer from the passage if you can.",
}


class PassageTaken(HitConflict):
    """The chosen passage got a question from someone else between the check and the store.

    Raised inside the submission transaction so that it rolls back (nothing of the submission is kept).
    """


@dataclass(frozen=True)
class QuestionAnswers:
    """A valid stage-1 submission: a question about one passage, or the rejection of all three."""

    passage_id: Optional[int]
    document_id: Optional[int] = None
    question: str = ""
    answer: str = ""
    normalized_answer: str = ""
    qc_flags: tuple[str, ...] = ()
    qc_severity: dict[str, str] = field(default_factory=dict)
    rejected_passage_ids: tuple[int, ...] = ()
    reject_reason: str = ""


_TAKE = SqlUpdate(Passage, set_fields=("used_by",), where=("id",), where_null=("used_by",))
"""``Passage.objects.filter(pk=..., used_by__isnull=True).update(used_by=...)``, written once."""
_SWAP = SqlUpdate(Passage, set_fields=("used_by",), where=("id", "used_by"))
"""``Passage.objects.filter(pk=..., used_by=holder).update(used_by=...)``: the compare-and-swap."""
_INSERT_PAIR = SqlInsert(QAPair, then=_TAKE)
"""``QAPair.objects.create(...)`` of each stored question, written once (no receiver listens to QAPair),
and with it, for a session vouched for, the taking of its passage (``_TAKE``, the new pair as ``used_by``)."""


def _taken_for_good(passage: Passage) -> bool:
    """True when work its platform vouches for holds ``passage`` (the rule in docs/admission.md).

    A pair written in a session its platform does not vouch for (stored before that rule) does not
    count; a pair of no session (imported, gold) does.
    """
    holder = passage.used_by_id
    return holder is not None and not _unconfirmed(holder)


def _unconfirmed(pair_id: int) -> bool:
    """True for a pair written in a session its platform does not vouch for (yet)."""
    return QAPair.objects.filter(pk=pair_id, assignment__vouched=False).exists()


def take_passage(pair: QAPair) -> bool:
    """Mark ``pair``'s passage used by it, unless work its platform vouches for already holds it.

    One conditional UPDATE in the common case: its row lock orders two takers of the same passage, and
    the second finds it used. A holder that is not vouched for is replaced by a compare-and-swap on
    that holder, so a concurrent taker is never overwritten.

    Returns:
        False when another pair holds the passage for good (vouched work, or a pair of no session).
    """
    for _ in range(3):  # each round loses only to a concurrent taker
        if _TAKE.run((pair.pk,), (pair.passage_id,)):
            return True
        holder = Passage.objects.filter(pk=pair.passage_id).values_list("used_by", flat=True).first()
        if holder == pair.pk:
            return True
        if holder is None:
            continue
        if not _unconfirmed(holder):
            return False
        if _SWAP.run((pair.pk,), (pair.passage_id, holder)):
            return True
    return False


def _pair(assignment: Assignment, cleaned: QuestionAnswers) -> QAPair:
    """The pending QA pair of a question about one passage (not saved)."""
    return QAPair(
        corpus=assignment.hit.batch.corpus,
        document_id=cleaned.document_id,
        passage_id=cleaned.passage_id,
        assignment=assignment,
        position=0,
        question_type=qt.SCIQ,
        question=cleaned.question,
        answer=cleaned.answer,
        normalized_answer=cleaned.normalized_answer,
        status=QAPair.Status.PENDING,
        qc_flags=list(cleaned.qc_flags),
        qc_severity=dict(cleaned.qc_severity),
    )


def _insert(pair: QAPair, vouched: bool) -> BoundWrite:
    """The pair's INSERT and, for a session its platform vouches for, the taking of its passage."""
    return _INSERT_PAIR.bind(pair, then_where=(pair.passage_id,) if vouched else None)


def _stored(assignment: Assignment, pair: QAPair, took: Optional[int]) -> None:
    """After the pair's INSERT (``took``: the rows its passage's take changed, None without a take):
    take the passage from a holder not vouched for, or give up.

    Raises:
        PassageTaken: when vouched work holds the passage (the transaction rolls back).
    """
    if assignment.vouched and not took and not take_passage(pair):
        logger.warning(
            "Assignment(%s) chose Passage(%s), already used by another pair", assignment.pk, pair.passage_id
        )
        raise PassageTaken(
            "Someone else has just written a question about this passage. "
            "Please choose another passage (or none), then submit again."
        )
    logger.info(
        "Assignment(%s) wrote QAPair(%s) about Passage(%s)%s",
        assignment.pk,
        pair.pk,
        pair.passage_id,
        "" if assignment.vouched else ", held until its platform vouches for it",
    )


def _message(code: str, text: str) -> str:
    sentence = text[:1].upper() + text[1:]
    hint = HINTS.get(code, "")
    return f"{sentence}. {hint}".strip()


class SciQQuestionHandler(HitHandler):
    """Three passages, a choice among them, and one question with its short answer."""

    template_name = "hits/sciq_question.html"
    tutorial_name = "sciq_question"
    tutorial_layout = PASSAGE_QUESTIONS
    built_from = BuiltFrom.PASSAGES
    default_title = "Write a science exam question about a textbook passage"
    pairs_per_assignment = 1
    #: an approved question is validated, and gets its distractors, in a SciQ stage-2 batch.
    stage2_kind = Batch.Kind.SCIQ_DISTRACTOR
    #: ``check`` runs SciQ QC with the options the job uses for a question awaiting its distractors
    #: (:func:`filters.services.qc_queryset`), and ``store`` keeps its flags and normalized answer.
    qc_at_submit = True
    field_names: ClassVar[frozenset[str]] = frozenset({"passage", "question", "answer", "reject_reason"})

    def accepts_field(self, name: str) -> bool:
        """The contract's three fields and the optional reason for rejecting all passages."""
        return name in self.field_names

    def context(self, hit: HIT, assignment: Optional[Assignment], token: str) -> dict[str, Any]:
        """The HIT's three passages (id, form value, text, word count) and the length limits."""
        passages = [
            {"id": p.pk, "value": str(p.pk), "number": i, "text": p.text, "words": len(p.text.split())}
            for i, p in enumerate(hit_passages.offered(hit), start=1)
        ]
        return {
            "passages": passages,
            "none_value": NONE_SUITABLE,
            "limits": {
                "question_min": QC_OPTIONS.min_question_words,
                "question_max": QC_OPTIONS.max_question_words,
                "answer_max": QC_OPTIONS.max_answer_words,
            },
        }

    def check(self, hit: HIT, assignment: Assignment, fields: Fields) -> FormCheck:
        """Check the passage choice, then run SciQ QC on the question, answer and chosen passage.

        QC errors block the submission and are shown next to their field; ``answer_not_in_passage`` is
        a warning (its QC severity is ``review``).
        """
        result = FormCheck(fields=fields)
        choice = str(fields.get("passage", "")).strip()
        offered = {p.pk: p for p in hit_passages.offered(hit)}
        if choice == NONE_SUITABLE:
            result.cleaned = QuestionAnswers(
                passage_id=None,
                rejected_passage_ids=tuple(sorted(offered)),
                reject_reason=str(fields.get("reject_reason", "")).strip(),
            )
            return result
        passage = offered.get(int(choice)) if choice.isdecimal() and choice.isascii() else None
        if not choice:
            result.error("passage", "Choose the passage your question is about, or “None of these passages”.")
        elif passage is None:
            result.error(
                "passage", f"Passage {choice!r} is not one of this HIT's passages; choose one of the three."
            )
        elif _taken_for_good(passage):
            result.error(
                "passage", "Another worker has just written a question about this passage; choose another."
            )
        question = str(fields.get("question", "")).strip()
        answer = str(fields.get("answer", "")).strip()
        if not question:
            result.error("question", "Write a question about the passage you chose.")
        if not answer:
            result.error("answer", "Write the answer (a word or short phrase from the passage).")
        qc = check_item(
            SciQItem(
                id=f"assignment-{assignment.pk}",
                question=question,
                answer=answer,
                passage=passage.text if passage is not None else "",
            ),
            QC_OPTIONS,
        )
        for issue in qc.issues:
            if not question and issue.field == "question":
                continue  # "Write a question" already says it
            message = _message(issue.code, issue.message)
            if issue.severity == ERROR:
                result.error(issue.field, message)
            else:
                result.warn(issue.field, message)
        if result.ok and passage is not None:
            result.cleaned = QuestionAnswers(
                passage_id=passage.pk,
                document_id=passage.document_id,
                question=question,
                answer=answer,
                normalized_answer=qc.normalized_answer,
                qc_flags=qc.flags,
                qc_severity=severities_of(qc.issues),
            )
        return result

    def submit(
        self, assignment: Assignment, check: FormCheck, active: Optional[tuple[str, int]] = None
    ) -> None:
        """Submit with the question's pair (and the taking of its passage) in the submit's round trip.

        The assignment's UPDATE, the pair's INSERT and, for a session vouched for, the passage's take go
        to the database together (:func:`annotation.sql_writes.together`: one round trip on
        PostgreSQL, where the INSERT and the take are one statement); a rejection of all three is
        stored as :meth:`store` stores it. A double submission's pair is rolled back with its
        transaction (:meth:`Assignment.submit`).
        """
        cleaned: QuestionAnswers = check.cleaned
        if cleaned.passage_id is None:
            super().submit(assignment, check, active)
            return
        pair = _pair(assignment, cleaned)
        (took,) = assignment.submit(check.fields, active=active, then=[_insert(pair, assignment.vouched)])
        _stored(assignment, pair, took)

    def store(self, assignment: Assignment, check: FormCheck) -> None:
        """Create the pending QA pair and, for a session vouched for, mark its passage used.

        A rejection of all three stores nothing but the answers, plus the rejected passage ids under
        ``rejected_passages``, and (vouched sessions) counts the rejection on each passage: the passages
        go back to the pool once this HIT is completed, until a second worker rejects them too
        (``MAX_CROWD_REJECTIONS``).

        A session its platform does not vouch for yet (MTurk's, until it is confirmed as submitted) takes
        nothing: its pair names its passage, and :meth:`confirmed` takes the passage (or counts the
        rejection) once the platform vouches for it. So work under a made-up id never uses up a HIT's
        passages, nor retires them (docs/admission.md).

        Raises:
            PassageTaken: when vouched work took the passage in the meantime (the transaction rolls back).
        """
        cleaned: QuestionAnswers = check.cleaned
        if cleaned.passage_id is None:
            assignment.answers = {
                **assignment.answers,
                "rejected_passages": list(cleaned.rejected_passage_ids),
            }
            assignment.save(update_fields=["answers"])
            if assignment.vouched:
                _count_rejection(cleaned.rejected_passage_ids)
            logger.info(
                "Assignment(%s) rejected Passages %s", assignment.pk, list(cleaned.rejected_passage_ids)
            )
            return
        pair = _pair(assignment, cleaned)
        _stored(assignment, pair, _insert(pair, assignment.vouched).run())

    def confirmed(self, assignment: Assignment) -> None:
        """Take the passage of a session its platform now vouches for, or count its rejection.

        When vouched work of another session took the passage first (two genuine workers chose it before
        either was confirmed), the pair is kept and flagged ``passage_reused`` for the researcher.
        """
        answers = assignment.answers if isinstance(assignment.answers, dict) else {}
        rejected = answers.get("rejected_passages")
        if rejected and assignment.status != Assignment.Status.ACCEPTED:
            _count_rejection([int(pk) for pk in rejected if str(pk).isdecimal()])
        for pair in QAPair.objects.filter(assignment=assignment, passage__isnull=False):
            if take_passage(pair):
                continue
            logger.warning("QAPair(%s): vouched work already holds Passage(%s)", pair.pk, pair.passage_id)
            if "passage_reused" not in pair.qc_flags:
                pair.qc_flags = [*pair.qc_flags, "passage_reused"]
                pair.qc_severity = {**pair.qc_severity, "passage_reused": REVIEW}
                pair.save(update_fields=["qc_flags", "qc_severity"])


def _count_rejection(passage_ids: Any) -> None:
    """Count one stage-1 worker's rejection on each passage (two retire it: ``MAX_CROWD_REJECTIONS``)."""
    Passage.objects.filter(pk__in=list(passage_ids)).update(crowd_rejections=F("crowd_rejections") + 1)
