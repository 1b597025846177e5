"""Expert batches: an expert answers a seeded random sample of a release split's questions.

Why (papers/syllabusqa.txt 2.3, "Agreement among Annotators"): an independent expert writes oracle answers
for randomly sampled test questions, choosing the question type first; agreement between the expert's and
the crowd's answers is the "Human" row of the leaderboard (``evaluation.services.human``). Each HIT
points at the crowd's pair (``HIT.qa_pair``) and its syllabus (``HIT.document``); the expert page never
shows the crowd's answer. Releases name items by :func:`exports.dataset.item_id`, so the sample is drawn
from the release's ``index.json`` and mapped back to stored pairs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation import question_types as qt
from annotation.hits import handler_for
from annotation.models import HIT, Batch, QAPair
from annotation.platforms import Platform
from annotation.services.batches import BatchSpecError
from exports.models import Release
from exports.release_files import load_index
from exports.release_store import release_root

logger = logging.getLogger(__name__)

_CROWD_PREFIX = "crowdqa-"
DEFAULT_TIME_LIMIT_MINUTES = 240
"""One assignment is one question, but the expert may keep a HIT open while reading a long syllabus."""


class ExpertBatchError(BatchSpecError):
    """An expert batch cannot be created as asked (bad split, unknown items, an MCQ release...)."""


def sample_item_ids(release_dir: Path, split: str, sample: int, seed: int) -> list[str]:
    """A seeded random sample of a release split's item ids (in sampled order).

    Args:
        release_dir: the release directory (its ``index.json`` names every item's split).
        split: ``train``, ``val`` or ``test``.
        sample: how many items; the whole split when it has fewer.
        seed: seeds :class:`random.Random`, so the same release and seed give the same sample.

    Raises:
        ExpertBatchError: a bad split or sample size, or an empty split.
        exports.release_files.ReleaseError: the release has no index.
    """
    if split not in qt.SPLITS:
        raise ExpertBatchError(f"unknown split {split!r}; expected one of {', '.join(qt.SPLITS)}")
    if sample < 1:
        raise ExpertBatchError(f"--sample must be at least 1, got {sample}")
    items = load_index(release_dir)["items"]
    ids = sorted(item for item, entry in items.items() if entry["split"] == split)
    if not ids:
        raise ExpertBatchError(f"{release_dir}: the {split} split has no items")
    if sample > len(ids):
        logger.warning(
            "%s: %s split has %d items, fewer than --sample %d", release_dir, split, len(ids), sample
        )
    return random.Random(seed).sample(ids, min(sample, len(ids)))


def pairs_for_item_ids(ids: Sequence[str], documents: dict[str, str]) -> list[QAPair]:
    """The stored QA pairs behind release item ids, in the order of ``ids``.

    The inverse of :func:`exports.dataset.item_id`: ``crowdqa-<pk>`` for crowd pairs, the source id for
    imported ones. Source ids are unique per corpus only, so an id found in several corpora is decided by
    the item's document name in the release index (``documents``: item id -> document name).

    Raises:
        ExpertBatchError: naming the first id with no pair, or one that stays ambiguous.
    """
    by_pk: dict[int, str] = {}
    external: list[str] = []
    for item in ids:
        suffix = item[len(_CROWD_PREFIX) :] if item.startswith(_CROWD_PREFIX) else ""
        if suffix.isdecimal() and suffix.isascii():
            by_pk[int(suffix)] = item
        else:
            external.append(item)
    found: dict[str, QAPair] = {}
    for pair in QAPair.objects.filter(pk__in=list(by_pk), external_id="").select_related("document"):
        found[by_pk[pair.pk]] = pair
    candidates: dict[str, list[QAPair]] = {}
    for pair in QAPair.objects.filter(external_id__in=external).select_related("document").order_by("pk"):
        candidates.setdefault(pair.external_id, []).append(pair)
    for item, pairs in candidates.items():
        if len(pairs) > 1:
            pairs = [p for p in pairs if p.document_id and p.document.name == documents.get(item)]
        if len(pairs) != 1:
            raise ExpertBatchError(
                f"release item {item!r}: {len(pairs)} stored QA pairs match it (document "
                f"{documents.get(item)!r}); cannot tell which one the release holds"
            )
        found[item] = pairs[0]
    missing = [item for item in ids if item not in found]
    if missing:
        raise ExpertBatchError(
            f"{len(missing)} release items have no stored QA pair, first: {missing[0]!r} "
            "(import the dataset or use the database the release was exported from)"
        )
    return [found[item] for item in ids]


def create_expert_batch(
    release: Release,
    sample: int,
    seed: int = 0,
    split: str = "test",
    *,
    name: str = "",
    time_limit_minutes: int = DEFAULT_TIME_LIMIT_MINUTES,
    created_by: Any = None,
) -> Batch:
    """Create and open (local crowd) an ``expert_answer`` batch: one HIT per sampled QA pair.

    Args:
        release: the catalogue row of the release (``exports.services.releases.register_release``).
        sample: how many questions the expert answers (the paper sampled about 10% of the test set).
        seed: the sampling seed (kept in ``batch.options`` with the sampled ids).
        split: the release split to sample from.
        name: the batch name; default names the release and split.
        time_limit_minutes: the time limit of one HIT.
        created_by: the researcher.

    Returns:
        The published batch; ``invite_workers --batch ID --expert`` gives the expert a link.

    Raises:
        ExpertBatchError: see :func:`sample_item_ids` and :func:`pairs_for_item_ids`; also for a
            multiple-choice release or pairs without a syllabus or from several corpora.
    """
    release_dir = release_root(release)
    ids = sample_item_ids(release_dir, split, sample, seed)
    index = load_index(release_dir)["items"]
    pairs = pairs_for_item_ids(ids, {item: index[item].get("document", "") for item in ids})
    for item, pair in zip(ids, pairs, strict=True):
        if pair.question_type not in qt.SYLLABUS_TYPES or pair.document_id is None:
            raise ExpertBatchError(
                f"release item {item!r} (QAPair({pair.pk})) is not a syllabus QA pair with a document; "
                "expert batches need a SyllabusQA-style release"
            )
    corpora = {pair.corpus_id for pair in pairs}
    if len(corpora) != 1:
        raise ExpertBatchError(f"the sampled pairs come from {len(corpora)} corpora; expected one")
    kind = Batch.Kind.EXPERT_ANSWER
    with transaction.atomic():
        batch = Batch.objects.create(
            name=name or f"expert answers on {release.name} {release.version} ({split})",
            kind=kind,
            provider=Platform.LOCAL,
            corpus_id=corpora.pop(),
            title=handler_for(kind).default_title,
            description=(
                "Answer each question from the syllabus, as a teaching assistant would. Choose the "
                "question type first; the answer box opens after."
            ),
            assignments_per_hit=1,
            time_limit_minutes=time_limit_minutes,
            release=release,
            options={
                "release_path": str(release_dir),
                "split": split,
                "sample": sample,
                "seed": seed,
                "items": ids,
            },
            created_by=created_by,
        )
        HIT.objects.bulk_create(
            HIT(batch=batch, position=i, document_id=pair.document_id, qa_pair=pair, max_assignments=1)
            for i, pair in enumerate(pairs)
        )
        batch.publish()
    logger.info(
        "created Batch(%s) expert_answer with %d HITs on Release(%s)", batch.pk, len(pairs), release.pk
    )
    return batch
