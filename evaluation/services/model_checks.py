"""The model in the loop during collection: a syllabus card's question answered by the batch's system.

One path (:func:`evaluation.model_in_the_loop.check_pair`), three callers:

- :func:`check_card`, for the HIT page: the page posts the card's question and answer
  (``worker.model_check_views``), a Celery job (:mod:`evaluation.loop_tasks`) asks the model and keeps
  the result per assignment and card (:class:`annotation.models.ModelCheck`), and the page polls for it
  under :func:`card_key`. The model runs on a Celery worker, never in the web process (its BM25 index
  and libraries stay out of the web workers), so a slow or broken model costs the page nothing but the
  "no model answer" it shows when its wait runs out.
- :func:`record_submission`, for the job queued after a submission: links each stored pair to its card's
  check when the worker did not change the card since, and asks again otherwise (or when the page never
  asked: a browser without script, a model that was down), so every pair of a batch with the setting on
  carries a check once the job ran.
- :func:`fooled_rates`, for the batch page: per question type, how many stored pairs were checked, how
  many fooled the model and how many of those a second worker confirmed.

Nothing here is on the submission's path: saving and submitting never wait for a model. This module
imports no model code at load (the web process imports it for :func:`loop_settings`).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from django.db.models import F, Sum

from annotation import question_types as qt
from annotation.hits import handler_for, kinds_where
from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.models import Assignment, Batch, ModelCheck, QAPair

if TYPE_CHECKING:
    from evaluation.model_in_the_loop import LoopResult

logger = logging.getLogger(__name__)

#: Seconds the HIT page waits for the model's answer before it shows "no model answer".
PAGE_WAIT_S = 10.0


@dataclass(frozen=True)
class LoopSettings:
    """A batch's ``model_in_the_loop`` option (``annotation.batch_schema.ModelLoop``), read."""

    mode: str
    system: str = "search"
    judge: str = "lexical"
    threshold: float = 0.3
    validation: bool = False

    @property
    def version(self) -> str:
        from evaluation.model_in_the_loop import system_version

        return system_version(self.system, judge=self.judge)


def loop_settings(batch: Batch) -> Optional[LoopSettings]:
    """The batch's model-in-the-loop settings, or None when it asks none (off, or a kind without cards)."""
    if not handler_for(batch.kind).model_in_the_loop:
        return None
    raw = batch.options.get("model_in_the_loop") or {}
    if raw.get("mode", "off") == "off":
        return None
    return LoopSettings(
        mode=raw["mode"],
        system=raw.get("system", "search"),
        judge=raw.get("judge", "lexical"),
        threshold=float(raw.get("threshold", 0.3)),
        validation=bool(raw.get("validation", False)),
    )


def card_key(question: str, answer: str) -> str:
    """A short digest of a card's question and answer: the page polls for the check of exactly these."""
    digest = hashlib.sha256(f"{question.strip()}\x00{answer.strip()}".encode())
    return digest.hexdigest()[:20]


def checked_answer(position: int, answer: str) -> str:
    """The answer the judge compares with: the fixed no-answer text on a no-answer card, else the worker's."""
    return qt.NO_ANSWER_TEXT if CARD_TYPES[position] == qt.NO_ANSWER else answer.strip()


def ask_model(
    syllabus: str, question: str, answer: str, question_type: str, loop: LoopSettings
) -> Optional[LoopResult]:
    """The model's answer and verdict, or None when it failed (logged).

    Fail-open by design: the caller shows or records "no model answer" and the worker's work goes on.
    The job's time limit bounds how long it may take.
    """
    try:
        from evaluation.model_in_the_loop import check_pair

        return check_pair(syllabus, question, answer, question_type, loop.system, loop.judge, loop.threshold)
    except Exception:  # noqa: BLE001 - any failure of the model means "no model answer", never an error
        logger.exception("model in the loop: %s failed; no model answer", loop.system)
    return None


def _save(
    assignment: Assignment,
    position: int,
    question: str,
    answer: str,
    result: LoopResult,
    loop: LoopSettings,
    source: str,
    pair: Optional[QAPair] = None,
) -> ModelCheck:
    values: dict[str, Any] = {
        "question_type": CARD_TYPES[position],
        "question": question,
        "worker_answer": answer,
        "system": result.system,
        "model_version": loop.version,
        "model_answer": result.model_answer,
        "abstained": result.abstained,
        "judge": result.judge,
        "verdict": result.verdict,
        "score": result.score,
        "latency_ms": result.latency_s * 1000,
        "source": source,
        "validation": "",
    }
    if pair is not None:
        values["qa_pair"] = pair
    check, created = ModelCheck.objects.update_or_create(
        assignment=assignment, position=position, defaults=values
    )
    if not created:
        ModelCheck.objects.filter(pk=check.pk).update(asks=F("asks") + 1)
    return check


def check_card(assignment: Assignment, position: int, question: str, answer: str) -> Optional[ModelCheck]:
    """Ask the batch's model about one card as the page has it; None when the model gave no answer.

    Raises:
        ValueError: the batch asks no model, the position is not a card, or the HIT has no syllabus.
    """
    loop = loop_settings(assignment.hit.batch)
    if loop is None:
        raise ValueError(f"Batch({assignment.hit.batch_id}) asks no model")
    if not 0 <= position < len(CARD_TYPES):
        raise ValueError(f"no card {position}")
    document = assignment.hit.document
    if document is None:
        raise ValueError(f"HIT({assignment.hit_id}) has no syllabus")
    question_type = CARD_TYPES[position]
    answer = checked_answer(position, answer)
    result = ask_model(document.text, question, answer, question_type, loop)
    if result is None:
        return None
    return _save(assignment, position, question, answer, result, loop, ModelCheck.Source.PAGE)


def stored_check(assignment: Assignment, position: int, key: str) -> Optional[ModelCheck]:
    """The card's check when it was asked about the question and answer that ``key`` names, else None."""
    check = ModelCheck.objects.filter(assignment=assignment, position=position).first()
    if check is None or card_key(check.question, check.worker_answer) != key:
        return None
    return check


def record_submission(assignment_id: int) -> dict[str, int]:
    """Give each stored pair of a submission its check: the page's if the card is unchanged, else a new one.

    Idempotent (a pair that has its check is left alone). Returns counts: ``linked`` (the page's check
    kept), ``asked`` (asked now), ``unanswered`` (the model gave no answer; the pair has no check).
    """
    assignment = Assignment.objects.select_related("hit__batch", "hit__document").get(pk=assignment_id)
    loop = loop_settings(assignment.hit.batch)
    counts = {"linked": 0, "asked": 0, "unanswered": 0}
    document = assignment.hit.document
    if loop is None or document is None:
        return counts
    checks = {c.position: c for c in ModelCheck.objects.filter(assignment=assignment)}
    pairs = QAPair.objects.filter(assignment=assignment, model_check__isnull=True).order_by("position")
    for pair in pairs:
        check = checks.get(pair.position)
        if check is not None and check.matches(pair.question, pair.answer):
            check.qa_pair = pair
            check.save(update_fields=["qa_pair", "updated"])
            counts["linked"] += 1
            continue
        result = ask_model(document.text, pair.question, pair.answer, pair.question_type, loop)
        if result is None:
            counts["unanswered"] += 1
            continue
        source = ModelCheck.Source.SUBMISSION
        _save(assignment, pair.position, pair.question, pair.answer, result, loop, source, pair)
        counts["asked"] += 1
    logger.info("Assignment(%s): model checks %s", assignment_id, counts)
    return counts


def submission_check_id(assignment_id: int) -> str:
    """The Celery task id of a submission's model checks: the sweep finds a lost one by it."""
    return f"model_check_submission:{assignment_id}"


def queue_submission_check(assignment_id: int, connection: Any = None) -> None:
    """Queue the model checks of a stored submission under its deterministic task id.

    Raises:
        Exception: whatever the broker raises; the caller logs it and :func:`requeue_unchecked` queues
            the job again later.
    """
    from evaluation.loop_tasks import submission_task

    batch = Batch.objects.filter(hits__assignments__pk=assignment_id).first()
    loop = loop_settings(batch) if batch is not None else None
    submission_task(*((loop.system, loop.judge) if loop else ("search",))).apply_async(
        args=[assignment_id], task_id=submission_check_id(assignment_id), connection=connection
    )


def requeue_unchecked(now: Optional[Any] = None, connection: Any = None) -> list[int]:
    """Queue again the model checks of submissions whose job never ran (periodic; idempotent).

    A submission of a batch with the model in the loop on, submitted between the follow-up sweep's
    window (``crowd.services.followups.SWEEP_WINDOW``) and its time limit ago, with a pair that has no
    check, is queued again when its job left no result (queueing failed at submit: the broker was down;
    or a killed worker lost the message) or a ``STARTED`` one older than the time limit. A job that ran
    and found the model down has a result, so a broken model is not asked again every sweep: its pairs
    stay "not checked yet". Returns the assignment ids queued.
    """
    from django.utils import timezone

    from crowd.services.followups import SWEEP_WINDOW, lost, time_limit

    now = now or timezone.now()
    rows = (
        Assignment.objects.filter(
            submitted_at__gte=now - SWEEP_WINDOW,
            submitted_at__lt=now - time_limit(),
            hit__batch__kind__in=kinds_where(lambda h: h.model_in_the_loop),
            qa_pairs__model_check__isnull=True,
        )
        .values_list("pk", "hit__batch_id")
        .distinct()
        .order_by("pk")
    )
    batches: dict[int, bool] = {}
    owed: dict[str, int] = {}
    for pk, batch_id in rows:
        if batch_id not in batches:
            batches[batch_id] = loop_settings(Batch.objects.get(pk=batch_id)) is not None
        if batches[batch_id]:
            owed[submission_check_id(pk)] = pk
    queued = lost(owed, now)
    for pk in queued:
        queue_submission_check(pk, connection=connection)
    if queued:
        logger.warning("model in the loop: re-queued the checks of submissions %s", queued)
    return queued


def validate_after_submission(assignment_id: int) -> dict[str, int]:
    """Send the batch's new "fooled" pairs to its validation batch when its option says ``validation``.

    Returns ``{"validation_hits": n}`` (the HITs added; empty when the option is off). Idempotent: a
    pair already in an open validation batch is not added again.
    """
    batch = Batch.objects.filter(hits__assignments=assignment_id).first()
    loop = loop_settings(batch) if batch is not None else None
    if loop is None or not loop.validation:
        return {}
    from crowd.services.validation_hits import validate_fooled_verdicts

    _child, added = validate_fooled_verdicts(batch)
    return {"validation_hits": added}


def _rates(
    rows: Iterable[tuple[str, str, str]], groups: Iterable[str] = qt.SYLLABUS_TYPES
) -> dict[str, dict[str, Any]]:
    """(group, verdict, validation) rows -> per group counts and rates; ``groups`` are always present."""
    by_type: dict[str, dict[str, Any]] = {
        t: {"checked": 0, "fooled": 0, "confirmed": 0, "disputed": 0} for t in groups
    }
    for question_type, verdict, validation in rows:
        group = by_type.setdefault(question_type, {"checked": 0, "fooled": 0, "confirmed": 0, "disputed": 0})
        group["checked"] += 1
        if verdict == ModelCheck.Verdict.FOOLED:
            group["fooled"] += 1
            if validation in ("confirmed", "disputed"):
                group[validation] += 1
    for group in by_type.values():
        group["fooled_rate"] = group["fooled"] / group["checked"] if group["checked"] else None
        validated = group["confirmed"] + group["disputed"]
        group["validated_rate"] = group["confirmed"] / group["checked"] if validated else None
    return by_type


def fooled_rates(batch: Batch) -> dict[str, Any]:
    """The batch's stored pairs' checks: per question type and overall, checked / fooled / fooled rate.

    ``calls`` counts every time the batch asked the model (cards not yet submitted and cards asked
    again too), the latency percentiles are those of each card's last answer: what the model in the
    loop costs.

    ``validated_rate`` is the share of checked pairs whose "fooled" a second worker confirmed (None
    until some verdict was validated): Dynabench's validated model error rate.
    """
    rows = list(
        ModelCheck.objects.filter(qa_pair__assignment__hit__batch=batch).values_list(
            "question_type", "verdict", "validation"
        )
    )
    by_type = _rates(rows)
    overall = _rates((("all", v, s) for _t, v, s in rows), ("all",))["all"]
    unchecked = (
        QAPair.objects.filter(assignment__hit__batch=batch, model_check__isnull=True).count()
        if loop_settings(batch)
        else 0
    )
    asked = ModelCheck.objects.filter(assignment__hit__batch=batch)
    latencies = sorted(asked.values_list("latency_ms", flat=True))
    return {
        "by_type": by_type,
        "overall": overall,
        "unchecked": unchecked,
        "calls": asked.aggregate(n=Sum("asks"))["n"] or 0,
        "latency_p50_ms": _nearest_rank(latencies, 50),
        "latency_p95_ms": _nearest_rank(latencies, 95),
    }


def validation_summary(batch: Batch) -> Optional[dict[str, Any]]:
    """For the batch page: its verdict validation batches, the fooled pairs waiting for one, and how
    many fooled verdicts were confirmed or disputed so far; None for a kind without verdict validation."""
    from annotation.services.verdict_validation import fooled_pairs

    kind = handler_for(batch.kind).verdict_validation_kind
    if kind is None:
        return None
    checks = ModelCheck.objects.filter(
        qa_pair__assignment__hit__batch=batch, verdict=ModelCheck.Verdict.FOOLED
    ).values_list("validation", flat=True)
    validations = list(checks)
    return {
        "batches": list(batch.children.filter(kind=kind).order_by("pk")),
        "waiting": fooled_pairs(batch, kind).count(),
        "fooled": len(validations),
        "confirmed": validations.count(ModelCheck.Validation.CONFIRMED),
        "disputed": validations.count(ModelCheck.Validation.DISPUTED),
    }


def _nearest_rank(ordered: list[float], q: float) -> Optional[float]:
    """The ``q``-th percentile (nearest rank) of sorted values, None when there are none."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]
