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
from typing import Any

from django.db import transaction

from annotation.hits import handler_for
from annotation.models import HIT, Batch, Distractor, QAPair
from crowd.providers.traits import traits_for

logger = logging.getLogger(__name__)

SUGGESTIONS_PER_HIT = 6
INHERITED_OPTIONS = (
    "locales",
    "min_approval_rate",
    "min_approved",
    "require_qualification_ids",
    "prolific_filters",
)
"""Worker requirements a stage-2 batch takes from its stage-1 batch (it goes on the same platform)."""


@functools.lru_cache(maxsize=1)
def _suggester(model_dir: str) -> Any:
    from distractors.ranker import load_suggester

    return load_suggester(Path(model_dir))


def suggester() -> Any:
    """The trained ranker in ``CROWDQA_MODEL_DIR/distractors``, or the named WordNet fallback."""
    from distractors.tasks import model_dir

    return _suggester(str(model_dir()))


def store_suggestions(pair: QAPair, top: int = SUGGESTIONS_PER_HIT) -> list[Distractor]:
    """Create the model suggestions of ``pair`` once; later calls return the stored ones."""
    existing = list(pair.distractors.filter(origin=Distractor.Origin.MODEL).order_by("model_rank"))
    if existing:
        return existing
    model = suggester()
    answer = pair.normalized_answer or pair.answer
    suggestions = model.suggest(pair.question, answer, top=top)
    rows = [
        Distractor(
            qa_pair=pair,
            text=s.text,
            origin=Distractor.Origin.MODEL,
            position=s.rank,
            model_version=s.source or model.model_version,
            model_score=float(s.score),
            model_rank=s.rank,
        )
        for s in suggestions
    ]
    Distractor.objects.bulk_create(rows)
    if len(rows) < top:
        logger.warning("QAPair(%s): only %d suggestions for answer %r", pair.pk, len(rows), answer)
    return rows


def add_validation_hit(batch: Batch, pair: QAPair) -> HIT:
    """Add (once) the validation HIT of ``pair`` to the stage-2 ``batch``, with its suggestions."""
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()
        hit = batch.hits.filter(qa_pair=pair).first()
        if hit is None:
            last = batch.hits.order_by("-position").values_list("position", flat=True).first()
            hit = HIT.objects.create(
                batch=batch,
                qa_pair=pair,
                position=0 if last is None else last + 1,
                max_assignments=batch.assignments_per_hit,
            )
    store_suggestions(pair)
    return hit


def stage2_batch_for(stage1: Batch) -> Batch:
    """The stage-2 batch that validates ``stage1``'s questions, created on first use.

    It inherits the provider, corpus, worker requirements (``INHERITED_OPTIONS``) and, on the local
    crowd, the status of stage 1; ``stage1.options`` may set ``stage2_reward_cents`` and
    ``stage2_assignments``. On MTurk / Prolific it stays a draft until ``publish_pending_hits`` puts it
    on the platform with its first HIT.

    Raises:
        ValueError: ``stage1``'s kind has no stage 2.
    """
    kind = handler_for(stage1.kind).stage2_kind
    if kind is None:
        raise ValueError(f"Batch({stage1.pk}) is a {stage1.kind} batch: its questions have no stage 2")
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=stage1.pk).first()
        child = stage1.children.filter(kind=kind).order_by("pk").first()
        if child is None:
            child = Batch.objects.create(
                name=f"{stage1.name} - validation",
                kind=kind,
                provider=stage1.provider,
                corpus=stage1.corpus,
                parent=stage1,
                title=handler_for(kind).default_title,
                reward_cents=int(stage1.options.get("stage2_reward_cents", stage1.reward_cents)),
                assignments_per_hit=int(stage1.options.get("stage2_assignments", 1)),
                time_limit_minutes=stage1.time_limit_minutes,
                budget_cap_cents=stage1.budget_cap_cents,
                created_by=stage1.created_by,
                options={k: stage1.options[k] for k in INHERITED_OPTIONS if k in stage1.options},
            )
            if stage1.status == Batch.Status.PUBLISHED and not traits_for(child.provider).external:
                child.publish()
    return child


def on_question_accepted(pair: QAPair) -> HIT:
    """Create the stage-2 HIT of an accepted stage-1 question (idempotent)."""
    stage1 = pair.assignment.hit.batch
    return add_validation_hit(stage2_batch_for(stage1), pair)
