"""SciQ stage 2: one validation HIT per accepted stage-1 question, with six suggested distractors.

Stage-2 HITs are created when stage-1 work is accepted (papers/sciq-crowdsourcing-mcq.txt 3.2). The
suggestions are stored as ``Distractor`` rows (origin ``model``, with score, rank and the suggester's
name) when the HIT is created, so every validator of the pair sees the same six options and the
release can report which suggestions were picked.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, Optional

from django.db import transaction

from annotation.hits import handler_for
from annotation.hits.sciq_distractor import suggestions_of
from annotation.models import HIT, Batch, Distractor, QAPair
from crowd.providers.traits import traits_for
from crowd.services.gold import serve_items

logger = logging.getLogger(__name__)

SUGGESTIONS_PER_HIT = 6
INHERITED_OPTIONS = (
    "locales",
    "min_approval_rate",
    "min_approved",
    "require_qualification_ids",
    "gold_rate",
    "attention_rate",
    "gold_warn_below",
    "gold_block_below",
    "gold_min_answers",
    "attention_block_failures",
    "auto_approve_seconds",
)
"""What a stage-2 batch takes from its stage-1 batch: worker requirements (it goes on the same platform),
with the platform's own launch settings (its traits' ``options``), the settings of its gold and
attention items (the items are served in stage 2), and the auto-approval delay."""


@functools.lru_cache(maxsize=1)
def _suggester(model_dir: str) -> Any:
    from distractors.ranker import load_suggester

    return load_suggester(Path(model_dir))


def suggester() -> Any:
    """The current trained ranker, or the named WordNet fallback.

    The ranker's directory names its version when it comes from the shared storage
    (:func:`distractors.model_store.current_model_dir`), so a ranker retrained on another host gives a
    new key and replaces the one this process holds.
    """
    from distractors.model_store import current_model_dir

    return _suggester(str(current_model_dir()))


def _suggest(pair: QAPair, top: int) -> list[Distractor]:
    """Ask the suggester (ranker, then every WordNet fallback) for ``pair``; unsaved rows, best first.

    This is the slow part (the first call of a process loads the model), so callers run it outside any
    transaction and store its rows together with the HIT.
    """
    model = suggester()
    answer = pair.normalized_answer or pair.answer
    return [
        Distractor(
            qa_pair=pair,
            text=s.text,
            origin=Distractor.Origin.MODEL,
            position=s.rank,
            model_version=s.source or model.model_version,
            model_score=float(s.score),
            model_rank=s.rank,
        )
        for s in model.suggest(pair.question, answer, top=top)
    ]


def _save_suggestions(pair: QAPair, rows: list[Distractor], top: int) -> list[Distractor]:
    """Store ``rows`` as ``pair``'s suggestions unless it has some already (call inside a transaction).

    The count is kept in ``pair.metadata["suggestions"]`` so that the researcher's batch page can show a
    question that got fewer than ``top`` (the ranker and every fallback came back short), which is also
    logged as a warning.
    """
    # Ordered by the key alone: the pair's default ordering joins its (nullable) document, and
    # PostgreSQL cannot lock the nullable side of an outer join.
    QAPair.objects.select_for_update().filter(pk=pair.pk).order_by("pk").first()
    existing = suggestions_of(pair)
    if existing:
        return existing
    Distractor.objects.bulk_create(rows)
    pair.metadata = {**(pair.metadata or {}), "suggestions": len(rows)}
    QAPair.objects.filter(pk=pair.pk).update(metadata=pair.metadata)
    if len(rows) < top:
        logger.warning(
            "QAPair(%s): only %d of %d suggestions for answer %r (ranker and fallbacks)",
            pair.pk,
            len(rows),
            top,
            pair.normalized_answer or pair.answer,
        )
    return rows


def store_suggestions(pair: QAPair, top: int = SUGGESTIONS_PER_HIT) -> list[Distractor]:
    """Create the model suggestions of ``pair`` once; later calls return the stored ones."""
    existing = suggestions_of(pair)
    if existing:
        return existing
    rows = _suggest(pair, top)
    with transaction.atomic():
        return _save_suggestions(pair, rows, top)


def add_validation_hit(batch: Batch, pair: QAPair) -> HIT:
    """Add (once) the validation HIT of ``pair`` to the stage-2 ``batch``, with its suggestions.

    The suggestions are computed first and committed in the same transaction as the HIT, so no worker
    can ever open the HIT before its six suggestions are there (a HIT committed alone was handed out
    while the suggester was still loading its model, and its worker saw none).

    Raises:
        Exception: whatever the suggester raises; then no HIT is created and the follow-up sweep
            re-queues the job.
    """
    rows = [] if suggestions_of(pair) else _suggest(pair, SUGGESTIONS_PER_HIT)
    created = False
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()
        _save_suggestions(pair, rows, SUGGESTIONS_PER_HIT)
        hit = batch.hits.filter(qa_pair=pair).first()
        if hit is None:
            last = batch.hits.order_by("-position").values_list("position", flat=True).first()
            hit = HIT.objects.create(
                batch=batch,
                qa_pair=pair,
                position=0 if last is None else last + 1,
                max_assignments=batch.assignments_per_hit,
            )
            created = True
    if created:
        serve_items(batch)  # the gold and attention items now due, after the real HIT
    return hit


def short_of_suggestions(batch: Batch) -> list[QAPair]:
    """The questions of a stage-2 ``batch`` offered fewer than six suggestions (shown to the researcher)."""
    from django.db.models import Count, Q

    return list(
        QAPair.objects.filter(validation_hits__batch=batch)
        .annotate(
            offered=Count(
                "distractors",
                filter=Q(distractors__origin=Distractor.Origin.MODEL, distractors__validation__isnull=True),
            )
        )
        .filter(offered__lt=SUGGESTIONS_PER_HIT)
        .order_by("pk")
    )


def stage2_batch_for(
    stage1: Batch, kind: Optional[str] = None, reward_cents: Optional[int] = None, open_only: bool = False
) -> Batch:
    """The stage-2 batch that validates ``stage1``'s work, created on first use.

    It inherits the provider, corpus, worker requirements (``INHERITED_OPTIONS``) and, on the local
    crowd, the status of stage 1; ``stage1.options`` may set ``stage2_reward_cents`` and
    ``stage2_assignments``. On MTurk / Prolific it stays a draft until ``publish_pending_hits`` puts it
    on the platform with its first HIT.

    Args:
        kind: the stage-2 kind (default: the handler's ``stage2_kind``; a model verdict validation
            batch passes its own).
        reward_cents: the stage-2 reward when ``stage2_reward_cents`` is not set (default: stage 1's).
        open_only: reuse only a child batch that is not completed or cancelled (else a new one).

    Raises:
        ValueError: ``stage1``'s kind has no stage 2.
    """
    kind = kind or handler_for(stage1.kind).stage2_kind
    if kind is None:
        raise ValueError(f"Batch({stage1.pk}) is a {stage1.kind} batch: its questions have no stage 2")
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=stage1.pk).first()
        children = stage1.children.filter(kind=kind)
        if open_only:
            children = children.exclude(status__in=[Batch.Status.COMPLETED, Batch.Status.CANCELLED])
        child = children.order_by("pk").first()
        if child is None:
            reward = stage1.reward_cents if reward_cents is None else reward_cents
            child = Batch.objects.create(
                name=f"{stage1.name} - validation",
                kind=kind,
                provider=stage1.provider,
                corpus=stage1.corpus,
                parent=stage1,
                title=handler_for(kind).default_title,
                reward_cents=int(stage1.options.get("stage2_reward_cents", reward)),
                assignments_per_hit=int(stage1.options.get("stage2_assignments", 1)),
                time_limit_minutes=stage1.time_limit_minutes,
                budget_cap_cents=stage1.budget_cap_cents,
                created_by=stage1.created_by,
                options={
                    k: stage1.options[k]
                    for k in (*INHERITED_OPTIONS, *traits_for(stage1.provider).options)
                    if k in stage1.options
                },
            )
            if stage1.status == Batch.Status.PUBLISHED and not traits_for(child.provider).external:
                child.publish()
    return child


def validate_fooled_verdicts(parent: Batch) -> tuple[Batch, int]:
    """Put every "fooled" pair of ``parent`` that no open validation batch holds into one (idempotent).

    The validation batch is ``parent``'s child of its handler's ``verdict_validation_kind`` (made by
    :func:`stage2_batch_for`, so it inherits provider and requirements as SciQ's stage 2 does). Its
    reward, unless ``stage2_reward_cents`` says otherwise, is stage 1's reward per written pair: one
    validation reads one pair. On MTurk / Prolific the new HITs are put on the platform; when the
    platform refuses, the next sync publishes them.

    Returns:
        the validation batch and the number of HITs added now.

    Raises:
        ValueError: ``parent``'s kind has no verdict validation.
    """
    from annotation.services.verdict_validation import add_fooled_hits
    from crowd.services.lifecycle import LifecycleError
    from crowd.services.publishing import publish_pending_hits

    handler = handler_for(parent.kind)
    kind = handler.verdict_validation_kind
    if kind is None:
        raise ValueError(f"Batch({parent.pk}) is a {parent.kind} batch: its model verdicts are not validated")
    per_pair = max(1, round(parent.reward_cents / max(1, handler.pairs_per_assignment)))
    child = stage2_batch_for(parent, kind=kind, reward_cents=per_pair, open_only=True)
    added = add_fooled_hits(child)
    if added:
        try:
            publish_pending_hits(child)
        except LifecycleError as exc:
            logger.warning(
                "Batch(%s): %d validation HITs not published yet (sync retries): %s", child.pk, added, exc
            )
    return child, added


def on_question_accepted(pair: QAPair) -> HIT:
    """Create the stage-2 HIT of an accepted stage-1 question (idempotent)."""
    stage1 = pair.assignment.hit.batch
    return add_validation_hit(stage2_batch_for(stage1), pair)
