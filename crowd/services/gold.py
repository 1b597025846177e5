"""Gold and attention items of a SciQ stage-2 batch: attach them, serve them among the real HITs, grade
each answer after submission and act on the batch's thresholds.

Why each step is where it is:

* **Attach** (:func:`attach_items`): an item becomes a QA pair of its own (in the :data:`GOLD_CORPUS`,
  so it never enters a corpus's release) with a passage and the same six model suggestions a real
  question gets, so its page is the real page: same template, same fields, same kind of ids.
* **Serve** (:func:`serve_items`): items get HITs only as real HITs arrive (``gold_rate`` /
  ``attention_rate`` per 100 real HITs), at the next position, so they are spread through the batch
  and a worker cannot tell them by where they sit. :func:`crowd.services.validation_hits.
  add_validation_hit` calls it after each real HIT.
* **Grade** (:func:`grade_assignment`): the after-submission job grades the stored validation once
  (``GoldAnswer`` is one per assignment), recounts the worker's :class:`GoldStanding` on the batch
  and, when the state becomes ``blocked``, blocks the worker: locally first, so no further HIT is
  handed to them whatever the platform says, then on the platform through
  :func:`crowd.services.review.block_worker`, the block action the researcher's buttons use. A platform
  refusal is kept on the standing (``block_error``) and the local block stays. A researcher who
  unblocks such a worker by hand is not overruled by the next recount: only a failure beyond those
  that blocked them blocks again (:func:`crowd.gold.needs_block`).
* **Warn**: when the state becomes ``warned``, the worker gets one message (``gold_warn_message``,
  default on) through the batch page's message action (:func:`crowd.services.messaging.message_worker`:
  a local worker's inbox, or the platform). Its claim (``warning_sent_at``) is stored with the standing
  before the message is sent, so it goes at most once per batch; a refusal is kept (``warning_error``).

A syllabus QA batch carries gold another way: its page is a 14-card writing task, not one pair to judge,
so a known-answer item cannot be one page among others. Instead every HIT of the batch shows the same
short block of questions about its syllabus (``launch_batch --quiz N`` or ``attach_gold --questions N``),
drawn from the syllabus's reference pairs exactly as the screening quiz draws them and graded after
submission by the screening quiz's grader (:mod:`annotation.screening.grader`). Since every HIT shows
them, no HIT stands out as the checked one. Each graded question counts as one gold answer in the
worker's :class:`GoldStanding` (:func:`grade_quiz_assignment`), so the same thresholds act.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Optional

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from annotation import question_types as qt
from annotation.hits import handler_for
from annotation.models import (
    HIT,
    Assignment,
    Batch,
    Corpus,
    GoldAnswer,
    GoldItem,
    GoldStanding,
    Passage,
    QAPair,
    ScreeningGrade,
    Validation,
    sha256_text,
)
from crowd.gold import (
    ATTENTION,
    GOLD,
    WARNED,
    GoldSpec,
    Thresholds,
    due,
    failures,
    grade,
    needs_block,
    standing,
    warning_message,
)
from crowd.models import Worker

logger = logging.getLogger(__name__)

GOLD_CORPUS = "crowdqa-gold"
"""The corpus that holds the items' pairs and passages (never a source of HITs or releases)."""

RATE_OPTIONS = {GOLD: "gold_rate", ATTENTION: "attention_rate"}


class GoldSetupError(ValueError):
    """Items cannot be attached to this batch, or an item is malformed (names the batch or source)."""


def gold_corpus() -> Corpus:
    """The corpus of the items' pairs, created on first use."""
    corpus, _ = Corpus.objects.get_or_create(
        name=GOLD_CORPUS,
        defaults={
            "kind": Corpus.Kind.TEXTBOOK,
            "description": "Gold and attention items served inside batches (crowd.services.gold); "
            "not crowd data: never exported.",
        },
    )
    return corpus


def target_batch(batch: Batch) -> Batch:
    """The batch whose HITs serve items: ``batch`` itself when its page judges a QA pair, else its
    stage-2 batch (created on first use) when it has one.

    Raises:
        GoldSetupError: the batch's kind can carry no items.
    """
    from crowd.services.validation_hits import stage2_batch_for

    handler = handler_for(batch.kind)
    if handler.serves_gold:
        return batch
    if handler.stage2_kind is not None and handler_for(handler.stage2_kind).serves_gold:
        return stage2_batch_for(batch)
    raise GoldSetupError(
        f"Batch({batch.pk}) is a {batch.kind} batch: gold and attention items are served in SciQ "
        "validation batches (give the validation batch or the question batch it validates)"
    )


def _check_spec(spec: GoldSpec) -> None:
    if spec.kind == ATTENTION:
        unknown = [f for f in spec.expected.get("flags", []) if f not in Validation.Flag.values]
        if unknown:
            raise GoldSetupError(
                f"{spec.source}: unknown flag {unknown[0]!r}; flags are {', '.join(Validation.Flag.values)}"
            )


def attach_items(batch: Batch, specs: Sequence[GoldSpec]) -> dict[str, Any]:
    """Attach items to ``batch`` (its stage-2 batch for a question batch), then serve what is due.

    An item whose source is already attached to the batch is skipped, so a repeated command adds
    nothing twice. Each item's suggestions are computed outside any transaction (the suggester is the
    slow part), as for a real question.

    Returns:
        ``{"batch", "attached", "skipped", "served"}``.

    Raises:
        GoldSetupError: the batch carries no items, or a spec names an unknown flag.
    """
    from crowd.services.validation_hits import store_suggestions

    target = target_batch(batch)
    for spec in specs:
        _check_spec(spec)
    known = set(target.gold_items.values_list("source", flat=True))
    corpus = gold_corpus()
    attached = skipped = 0
    for spec in specs:
        if spec.source in known:
            skipped += 1
            continue
        with transaction.atomic():
            passage = Passage.objects.create(
                corpus=corpus,
                text=spec.passage,
                text_sha256=sha256_text(spec.passage),
                filter_status=Passage.FilterStatus.REJECTED,
            )
            pair = QAPair.objects.create(
                corpus=corpus,
                passage=passage,
                question_type=qt.SCIQ,
                question=spec.question,
                answer=spec.answer,
                normalized_answer=spec.answer,
                status=QAPair.Status.ACCEPTED,
            )
            GoldItem.objects.create(
                batch=target, kind=spec.kind, qa_pair=pair, expected=spec.expected, source=spec.source
            )
        store_suggestions(pair)
        known.add(spec.source)
        attached += 1
    served = serve_items(target)
    logger.info("Batch(%s): %d item(s) attached, %d skipped, %d served", target.pk, attached, skipped, served)
    return {"batch": target.pk, "attached": attached, "skipped": skipped, "served": served}


def serve_items(batch: Batch) -> int:
    """Give HITs to as many unserved items as the batch's rates call for now; returns how many.

    Under the batch's row lock (the lock ``add_validation_hit`` takes), so two real HITs arriving at
    once never serve the same item twice or count each other's items.
    """
    rates = {kind: batch.options.get(option) or 0 for kind, option in RATE_OPTIONS.items()}
    if not any(rates.values()):
        return 0
    served = 0
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()
        real = batch.hits.filter(gold_item__isnull=True).count()
        for kind, rate in rates.items():
            items = GoldItem.objects.filter(batch=batch, kind=kind)
            wanted = due(real, items.filter(hit__isnull=False).count(), float(rate))
            for item in items.unserved().order_by("pk")[:wanted]:
                last = batch.hits.order_by("-position").values_list("position", flat=True).first()
                item.hit = HIT.objects.create(
                    batch=batch,
                    qa_pair=item.qa_pair,
                    position=0 if last is None else last + 1,
                    max_assignments=batch.assignments_per_hit,
                )
                item.save(update_fields=["hit"])
                served += 1
    if served:
        logger.info("Batch(%s): %d gold/attention item(s) served among %d real HITs", batch.pk, served, real)
    return served


def grade_assignment(assignment_id: int) -> Optional[dict[str, Any]]:
    """Grade a submitted answer to an item and act on the worker's standing; None for a real HIT.

    Idempotent: the answer is graded once (a retried job finds its ``GoldAnswer``), and the block is
    acted on only when the standing becomes blocked.
    """
    item = GoldItem.objects.filter(hit__assignments=assignment_id).select_related("batch").first()
    if item is None:
        return None
    row = (
        Assignment.objects.filter(pk=assignment_id)
        .values("worker_id", "validation__flags", "validation__pk")
        .first()
    )
    if row is None or row["validation__pk"] is None:
        return None
    result = grade(item.kind, item.expected, row["validation__flags"] or [])
    answer, _ = GoldAnswer.objects.get_or_create(
        assignment_id=assignment_id,
        defaults={
            "item": item,
            "worker_id": row["worker_id"],
            "passed": result.passed,
            "given": result.given,
        },
    )
    worker = Worker.objects.get(pk=row["worker_id"])
    record = update_standing(item.batch, worker)
    return {"item": item.kind, "passed": answer.passed, "standing": record.state}


def update_standing(batch: Batch, worker: Worker) -> GoldStanding:
    """Recount ``worker``'s answers to ``batch``'s items, store the standing and act on a new block.

    Only answers of sessions their platform vouches for count (``Assignment.vouched``; an MTurk
    session once MTurk listed it as that worker's submitted work): answers submitted under made-up ids
    in a worker's name never get that worker flagged or blocked. Sync and review recount when they
    confirm a session (:func:`recount_confirmed`).
    """
    answers = list(
        GoldAnswer.objects.filter(item__batch=batch, worker=worker, assignment__vouched=True).values_list(
            "item__kind", "passed"
        )
    )
    gold = [passed for kind, passed in answers if kind == GOLD]
    attention = [passed for kind, passed in answers if kind == ATTENTION]
    quiz_n, quiz_correct = _quiz_counts(batch, worker)
    decided = standing(
        len(gold) + quiz_n,
        sum(gold) + quiz_correct,
        len(attention),
        sum(not p for p in attention),
        Thresholds.from_options(batch.options),
    )
    failed = failures(decided.gold_n, decided.gold_correct, decided.attention_failed)
    with transaction.atomic():
        record, _ = GoldStanding.objects.select_for_update().get_or_create(batch=batch, worker=worker)
        blocked_now = Worker.objects.filter(pk=worker.pk).values_list("blocked", flat=True).first()
        block = needs_block(decided.state, record.state, bool(blocked_now), failed, record.failures_at_block)
        if block:
            record.failures_at_block = failed
        warn = (
            decided.state == WARNED
            and record.warning_sent_at is None
            and batch.options.get("gold_warn_message", True)
        )
        if warn:  # claimed before sending, so a retried job or a recount never sends it twice
            record.warning_sent_at = timezone.now()
        record.gold_n, record.gold_correct = decided.gold_n, decided.gold_correct
        record.attention_n, record.attention_failed = decided.attention_n, decided.attention_failed
        record.state, record.reason = decided.state, decided.reason
        record.save()
    if block:
        _block(record, worker)
    if warn:
        _warn(record, worker, batch)
    return record


def _quiz_counts(batch: Batch, worker: Worker) -> tuple[int, int]:
    """Known-answer questions on the syllabus a worker answered in ``batch`` (graded ones, an unanswered
    one counting as wrong and an ``uncertain`` grade left out, as the screening quiz counts) and how
    many were graded correct; vouched sessions only, as for items."""
    if not handler_for(batch.kind).gold_quiz:
        return 0, 0
    totals = ScreeningGrade.objects.filter(
        assignment__hit__batch=batch,
        assignment__worker=worker,
        assignment__vouched=True,
        status=ScreeningGrade.Status.GRADED,
    ).aggregate(n=Sum("n_graded"), correct=Sum("n_correct"))
    return totals["n"] or 0, totals["correct"] or 0


def grade_quiz_assignment(grade: ScreeningGrade) -> dict[str, Any]:
    """Recount the standing of the worker of a syllabus submission whose known-answer questions were
    just graded (:func:`annotation.screening.grader.grade_screening_assignment`), and act on it."""
    assignment = Assignment.objects.select_related("hit__batch", "worker").get(pk=grade.assignment_id)
    record = update_standing(assignment.hit.batch, assignment.worker)
    return {"item": "questions", "score": grade.score_label, "standing": record.state}


def recount_confirmed(assignment_id: int) -> None:
    """Recount the standing of a just confirmed session's worker when it answered an item."""
    answer = (
        GoldAnswer.objects.filter(assignment_id=assignment_id).select_related("item__batch", "worker").first()
    )
    if answer is not None:
        update_standing(answer.item.batch, answer.worker)
        return
    graded = (
        ScreeningGrade.objects.filter(assignment_id=assignment_id)
        .select_related("assignment__hit__batch", "assignment__worker")
        .first()
    )
    if graded is not None and handler_for(graded.assignment.hit.batch.kind).gold_quiz:
        update_standing(graded.assignment.hit.batch, graded.assignment.worker)


def _block(record: GoldStanding, worker: Worker) -> None:
    """Block locally (committed at once), then on the platform; a refusal is kept, the block stays."""
    from crowd.services.review import ReviewError, block_worker

    reason = f"Batch({record.batch_id}) quality checks: {record.reason}"[:1000]
    Worker.objects.filter(pk=worker.pk).update(blocked=True, block_reason=reason)
    logger.warning("Worker(%s) blocked on Batch(%s) gold/attention: %s", worker.pk, record.batch_id, reason)
    try:
        block_worker(worker, reason)
    except ReviewError as exc:
        Worker.objects.filter(pk=worker.pk).update(blocked=True, block_reason=reason)
        GoldStanding.objects.filter(pk=record.pk).update(block_error=str(exc)[:1000])
        logger.warning("Worker(%s) blocked locally; the platform refused: %s", worker.pk, exc)


def _warn(record: GoldStanding, worker: Worker, batch: Batch) -> None:
    """Send the flagged worker the warning message through the batch's messaging (a local worker's
    inbox, or the platform); a refusal is kept on the standing and not retried (the message is owed
    once, and its claim is already stored)."""
    from crowd.services.messaging import message_worker
    from crowd.services.review import ReviewError

    subject, text = warning_message(
        batch.title or batch.name, record.gold_n, record.gold_correct, record.attention_failed
    )
    try:
        message_worker(worker, batch, subject, text)
    except ReviewError as exc:
        GoldStanding.objects.filter(pk=record.pk).update(warning_error=str(exc)[:1000])
        logger.warning(
            "Worker(%s) flagged on Batch(%s); the warning was not sent: %s", worker.pk, batch.pk, exc
        )
    else:
        logger.info("Worker(%s) flagged on Batch(%s) and sent the warning", worker.pk, batch.pk)


def standings(batch: Batch) -> dict[int, GoldStanding]:
    """The stored standings of ``batch``'s workers, by worker id."""
    return {s.worker_id: s for s in GoldStanding.objects.filter(batch=batch)}
