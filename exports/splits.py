"""Group-aware train/val/test splits: no source document (syllabus, passage) ever spans two splits.

Why groups: SyllabusQA tests whether a system answers questions about *unseen* syllabi, so all QA
pairs of one syllabus go to one split (paper section 2.3: "no overlap in syllabi across splits"). Two
modes exist:

* :func:`group_split` targets ratios by number of QA pairs (default 0.8/0.1/0.1) and keeps each split's
  question-type mix close to the whole: a seeded greedy assignment (largest groups first) followed by
  a local search over moves and swaps of whole groups.
* :func:`sciq_split` gives val and test a fixed size (SciQ: 1,000 and 1,000 questions) and the rest to
  train.

Both honour an earlier release's assignment (:class:`PreviousAssignment`): items it had never move,
documents it had keep their split (new items of an old document join it), new documents are assigned
fresh. :func:`check_disjoint` refuses (raises) when any document is in two splits, except the documents
a source dataset's own split already shares (an ``original`` previous assignment), which are reported.
"""

from __future__ import annotations

import logging
import random
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Optional

from annotation.question_types import SPLITS
from exports.split_types import (
    GroupCollector,
    GroupStats,
    PreviousAssignment,
    SplitAssignment,
    SplitError,
    SplitItem,
    SplitLeakError,
    join_documents,
    merge_groups,
    normalize_ratios,
    question_key,
)

logger = logging.getLogger(__name__)

#: The types of :mod:`exports.split_types` are part of this module's interface: callers import them here.
__all__ = [
    "DEFAULT_RATIOS",
    "SCIQ_TEST_SIZE",
    "SCIQ_VAL_SIZE",
    "SPLITS",
    "GroupCollector",
    "GroupStats",
    "PreviousAssignment",
    "SplitAssignment",
    "SplitError",
    "SplitItem",
    "SplitLeakError",
    "check_disjoint",
    "group_split",
    "group_split_groups",
    "join_documents",
    "merge_groups",
    "normalize_ratios",
    "question_key",
    "sciq_split",
    "sciq_split_groups",
]

DEFAULT_RATIOS: tuple[float, float, float] = (0.8, 0.1, 0.1)
SCIQ_VAL_SIZE = 1000
SCIQ_TEST_SIZE = 1000


def _expand(doc_split: Mapping[str, str], clusters: Optional[Mapping[str, str]]) -> dict[str, str]:
    """Document -> split from the split of each cluster representative."""
    if not clusters:
        return dict(doc_split)
    return {doc: doc_split[key] for doc, key in clusters.items() if key in doc_split}


def _groups(items: Sequence[SplitItem], previous: Optional[PreviousAssignment]) -> GroupCollector:
    """Per-document aggregates of ``items``.

    Raises:
        SplitError: a duplicate item id.
    """
    collector = GroupCollector(previous)
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise SplitError(f"duplicate item id {item.id!r} (document {item.group!r})")
        seen.add(item.id)
        collector.add(item)
    return collector


def _fixed_groups(groups: Mapping[str, GroupStats], previous: Optional[PreviousAssignment]) -> dict[str, str]:
    """Return document -> split for the documents the previous assignment pins.

    A document an original assignment shares between splits is left out (see :func:`_shared_groups`).

    Raises:
        SplitError: an earlier split name is unknown, or a document's kept items disagree.
    """
    if previous is None:
        return {}
    shared = _shared_groups(groups, previous)
    pinned: dict[str, str] = {}
    for doc, stats in groups.items():
        if doc in shared:
            continue
        splits = set(stats.previous)
        if doc in previous.documents:
            splits.add(previous.documents[doc])
        bad = splits - set(SPLITS)
        if bad:
            raise SplitError(f"previous assignment: document {doc!r} has unknown split(s) {sorted(bad)}")
        if len(splits) > 1:
            raise SplitLeakError(
                f"previous assignment puts items of document {doc!r} in {sorted(splits)}; "
                "old items never move, so this document cannot be kept in one split"
            )
        if splits:
            pinned[doc] = splits.pop()
    return pinned


def _shared_groups(
    groups: Mapping[str, GroupStats], previous: Optional[PreviousAssignment]
) -> dict[str, dict[str, int]]:
    """Documents an original assignment puts in more than one split: document -> split -> items.

    Raises:
        SplitLeakError: a shared document has an item the original assignment does not place.
    """
    if previous is None or not previous.original:
        return {}
    shared: dict[str, dict[str, int]] = {}
    for doc, stats in groups.items():
        counts = stats.previous
        if len(counts) < 2:
            continue
        if stats.first_new is not None:
            raise SplitLeakError(
                f"document {doc!r} is in {sorted(counts)} in the original splits, so its new item "
                f"{stats.first_new!r} has no split to join"
            )
        shared[doc] = {s: counts[s] for s in SPLITS if counts.get(s)}
    return shared


def _summarize(
    groups: Mapping[str, GroupStats],
    doc_split: Mapping[str, str],
    *,
    mode: str,
    seed: int,
    target_ratios: Optional[Mapping[str, float]],
    target_sizes: Optional[Mapping[str, int]],
    kept: int,
    previous: Optional[PreviousAssignment] = None,
    items: Optional[Sequence[SplitItem]] = None,
) -> SplitAssignment:
    """The assignment of documents ``doc_split`` with its counts; ``items`` listed when given."""
    shared = _shared_groups(groups, previous)
    counts: Counter[str] = Counter()
    strata: dict[str, Counter[str]] = {s: Counter() for s in SPLITS}
    for doc, stats in groups.items():
        if doc in shared:
            for (split, stratum), n in stats.previous_strata.items():
                counts[split] += n
                strata.setdefault(split, Counter())[stratum] += n
        else:
            split = doc_split[doc]
            counts[split] += stats.size
            strata[split].update(stats.strata)
    total = sum(stats.size for stats in groups.values())
    item_split: dict[str, str] = {}
    if items is not None:
        item_split = {
            item.id: previous.items[item.id] if previous and item.group in shared else doc_split[item.group]
            for item in items
        }
    doc_counts = Counter(split for doc, split in doc_split.items() if doc not in shared)
    for by_split in shared.values():
        doc_counts.update(by_split.keys())
    return SplitAssignment(
        items=item_split,
        documents=dict(sorted(doc_split.items())),
        mode=mode,
        seed=seed,
        target_ratios=target_ratios,
        target_sizes=target_sizes,
        counts={s: counts.get(s, 0) for s in SPLITS},
        achieved_ratios={s: round(counts.get(s, 0) / total, 4) if total else 0.0 for s in SPLITS},
        document_counts={s: doc_counts.get(s, 0) for s in SPLITS},
        stratum_counts={s: dict(sorted(strata[s].items())) for s in SPLITS},
        kept_items=kept,
        shared_documents=dict(sorted(shared.items())),
        previous_items=previous.items if previous is not None and shared else {},
    )


class _Objective:
    """Squared distance of split sizes from the targets plus a weighted distance from the ideal type counts.

    Per split s with n items and stratum counts c_t (N items in all, overall stratum shares p_t,
    target share r_s): ``(n/N - r_s)**2 + w/r_s * sum_t (c_t/N - r_s*p_t)**2``. The type term compares
    counts with the split's *target* counts (not with its current size), so it stays convex and never
    traps an almost empty split; dividing by r_s makes it a share-of-split distance weighted by r_s.
    Only the two splits a move touches change, so a move is priced from two rows.
    """

    def __init__(self, ratios: Sequence[float], shares: Sequence[float], total: int, weight: float) -> None:
        self.ratios = list(ratios)
        self.shares = list(shares)
        self.total = total
        self.weight = weight

    def term(self, s: int, row: Sequence[int], n: int) -> float:
        ratio = self.ratios[s]
        size = (n / self.total - ratio) ** 2
        if self.weight == 0.0 or ratio == 0.0:
            return size
        mix = sum((c / self.total - ratio * p) ** 2 for c, p in zip(row, self.shares, strict=False))
        return size + self.weight / ratio * mix


def group_split(
    items: Sequence[SplitItem],
    *,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    seed: int = 0,
    previous: Optional[PreviousAssignment] = None,
    type_weight: float = 1.0,
    max_passes: int = 30,
    swap_candidates: int = 24,
) -> SplitAssignment:
    """Split items by document, targeting ``ratios`` of items and each split's type mix.

    Args:
        items: the items; ``group`` is the document id, ``stratum`` the question type.
        ratios: train/val/test shares of items; must sum to 1.
        seed: makes the result reproducible; other seeds give other (equally good) splits.
        previous: an earlier release's assignment to keep.
        type_weight: weight of the type-mix term against the size term (0 ignores types).
        max_passes: bound on local-search passes.
        swap_candidates: most random partners tried per group when swapping (fewer with many groups).

    Returns:
        The assignment, with achieved ratios and every item listed in ``items``.

    Raises:
        SplitError: bad ratios, duplicate ids or a conflicting previous assignment.
    """
    normalize_ratios(ratios)
    collector = _groups(items, previous)
    result = group_split_groups(
        collector.groups,
        kept=collector.kept,
        ratios=ratios,
        seed=seed,
        previous=previous,
        type_weight=type_weight,
        max_passes=max_passes,
        swap_candidates=swap_candidates,
        items=items,
    )
    check_disjoint(items, result)
    return result


class _Placement:
    """Per-split stratum counts and sizes while the groups are placed, priced by the objective.

    Why: the greedy placement and both local-search moves read and change the same rows; keeping them
    here lets each step be a method of its own.
    """

    def __init__(self, objective: _Objective, strata: int) -> None:
        self.objective = objective
        self.rows = [[0] * strata for _ in SPLITS]
        self.sizes = [0] * len(SPLITS)

    def add(self, s: int, vec: list[int], sign: int) -> None:
        for t, c in enumerate(vec):
            self.rows[s][t] += sign * c
        self.sizes[s] += sign * sum(vec)

    def hold(
        self,
        groups: Mapping[str, GroupStats],
        pinned: Mapping[str, str],
        shared: Collection[str],
        strata: Sequence[str],
    ) -> None:
        """Count the groups whose split is fixed: pinned ones whole, shared ones by their items' splits."""
        split_index = {s: i for i, s in enumerate(SPLITS)}
        index = {name: i for i, name in enumerate(strata)}
        for doc, split in pinned.items():
            self.add(split_index[split], groups[doc].vector(strata), 1)
        for doc in shared:
            for (split, stratum), n in groups[doc].previous_strata.items():
                self.rows[split_index[split]][index[stratum]] += n
                self.sizes[split_index[split]] += n

    def term(self, s: int) -> float:
        return self.objective.term(s, self.rows[s], self.sizes[s])

    def moved_terms(self, s: int, vec: list[int], sign: int) -> float:
        row = [a + sign * b for a, b in zip(self.rows[s], vec, strict=False)]
        return self.objective.term(s, row, self.sizes[s] + sign * sum(vec))

    def best_split(self, vec: list[int]) -> int:
        """The split whose objective grows least when a group of counts ``vec`` joins it."""
        best, best_delta = 0, float("inf")
        for s in range(len(SPLITS)):
            delta = self.moved_terms(s, vec, 1) - self.term(s)
            if delta < best_delta - 1e-15:
                best, best_delta = s, delta
        return best

    def move_pass(self, order: list[str], vectors: Mapping[str, list[int]], where: dict[str, int]) -> float:
        """Move each group to the first other split that lowers the objective; the total gain."""
        gain = 0.0
        for doc in order:
            vec, a = vectors[doc], where[doc]
            base_a = self.term(a)
            for b in range(len(SPLITS)):
                if b == a:
                    continue
                delta = self.moved_terms(a, vec, -1) + self.moved_terms(b, vec, 1) - base_a - self.term(b)
                if delta < -1e-15:
                    self.add(a, vec, -1)
                    self.add(b, vec, 1)
                    where[doc] = b
                    gain -= delta
                    break
        return gain

    def swap_gain(self, a: int, b: int, va: list[int], vb: list[int]) -> float:
        """How much swapping a group of counts ``va`` in split ``a`` with one of ``vb`` in ``b`` lowers the
        objective (0 when the two groups have the same counts)."""
        diff = [x - y for x, y in zip(va, vb, strict=False)]
        n_diff = sum(diff)
        if n_diff == 0 and all(x == 0 for x in diff):
            return 0.0
        row_a = [r - d for r, d in zip(self.rows[a], diff, strict=False)]
        row_b = [r + d for r, d in zip(self.rows[b], diff, strict=False)]
        delta = (
            self.objective.term(a, row_a, self.sizes[a] - n_diff)
            + self.objective.term(b, row_b, self.sizes[b] + n_diff)
            - self.term(a)
            - self.term(b)
        )
        return -delta

    def swap_pass(
        self,
        order: list[str],
        free: list[str],
        vectors: Mapping[str, list[int]],
        where: dict[str, int],
        rng: random.Random,
        partners_per_group: int,
        gain: float = 0.0,
    ) -> float:
        """Swap each group with the first sampled partner of another split that lowers the objective;
        ``gain`` plus the gain of the swaps."""
        for doc in order:
            a = where[doc]
            partners = [d for d in rng.sample(free, min(partners_per_group, len(free))) if where[d] != a]
            for other in partners:
                b = where[other]
                va, vb = vectors[doc], vectors[other]
                saved = self.swap_gain(a, b, va, vb)
                if saved > 1e-15:
                    self.add(a, va, -1)
                    self.add(b, vb, -1)
                    self.add(b, va, 1)
                    self.add(a, vb, 1)
                    where[doc], where[other] = b, a
                    gain += saved
                    break
        return gain


def group_split_groups(
    groups: Mapping[str, GroupStats],
    *,
    kept: int = 0,
    ratios: Sequence[float] = DEFAULT_RATIOS,
    seed: int = 0,
    previous: Optional[PreviousAssignment] = None,
    type_weight: float = 1.0,
    max_passes: int = 30,
    swap_candidates: int = 24,
    items: Optional[Sequence[SplitItem]] = None,
    clusters: Optional[Mapping[str, str]] = None,
) -> SplitAssignment:
    """:func:`group_split` from per-document aggregates (see :class:`GroupCollector`).

    The result depends on the aggregates only, so splitting the items or their aggregates gives the
    same documents in the same splits. ``items`` (when given) are listed in the result's ``items``;
    without them, :meth:`SplitAssignment.split_for` tells an item's split. ``clusters``
    (:meth:`GroupCollector.clusters`) draws linked documents as one group, so they share a split.
    """
    target = normalize_ratios(ratios)
    documents = groups
    groups = merge_groups(groups, clusters) if clusters else groups
    pinned = _fixed_groups(groups, previous)
    total = sum(stats.size for stats in groups.values())
    if total == 0:
        return _summarize(
            groups, {}, mode="group", seed=seed, target_ratios=target, target_sizes=None, kept=0, items=items
        )

    overall: Counter[str] = Counter()
    for stats in groups.values():
        overall.update(stats.strata)
    strata = sorted(t for t, n in overall.items() if n)
    objective = _Objective(
        [target[s] for s in SPLITS], [overall[t] / total for t in strata], total, type_weight
    )
    placement = _Placement(objective, len(strata))
    shared = _shared_groups(groups, previous)
    placement.hold(groups, pinned, shared, strata)

    rng = random.Random(seed)
    free = sorted(doc for doc in groups if doc not in pinned and doc not in shared)
    rng.shuffle(free)
    free.sort(key=lambda d: groups[d].size, reverse=True)  # stable: ties keep the seeded order
    vectors = {doc: groups[doc].vector(strata) for doc in free}
    where: dict[str, int] = {}
    for doc in free:
        where[doc] = placement.best_split(vectors[doc])
        placement.add(where[doc], vectors[doc], 1)

    # Local search: move one group, or swap two groups of different splits, while a pass still gains
    # more than one item's worth of size error. Swap partners are sampled, and fewer per group when
    # there are many groups, so a pass costs at most about 200,000 swap evaluations.
    min_gain = 1.0 / total**2
    partners_per_group = max(2, min(swap_candidates, 200_000 // max(1, len(free))))
    for _ in range(max_passes):
        order = list(free)
        rng.shuffle(order)
        gain = placement.move_pass(order, vectors, where)
        gain = placement.swap_pass(order, free, vectors, where, rng, partners_per_group, gain)
        if gain < min_gain:
            break

    doc_split = dict(pinned)
    doc_split.update({doc: SPLITS[s] for doc, s in where.items()})
    result = _summarize(
        documents,
        _expand(doc_split, clusters),
        mode="group",
        seed=seed,
        target_ratios=target,
        target_sizes=None,
        kept=kept,
        previous=previous,
        items=items,
    )
    logger.info(
        "group_split: %d items, %d documents in %d groups, seed %d -> counts %s, ratios %s",
        total,
        len(documents),
        len(groups),
        seed,
        dict(result.counts),
        dict(result.achieved_ratios),
    )
    return result


def sciq_split(
    items: Sequence[SplitItem],
    *,
    val_size: int = SCIQ_VAL_SIZE,
    test_size: int = SCIQ_TEST_SIZE,
    seed: int = 0,
    previous: Optional[PreviousAssignment] = None,
) -> SplitAssignment:
    """Give val and test a fixed number of items (SciQ: 1,000 each) and the rest to train.

    Documents are taken in a seeded random order; a document goes to val while it fits, else to test
    while it fits, else to train, so both sizes are met exactly whenever enough small groups exist.
    Items kept from ``previous`` count towards the sizes.

    Raises:
        SplitError: negative sizes, duplicate ids or a conflicting previous assignment.
    """
    if val_size < 0 or test_size < 0:
        raise SplitError(f"sciq_split: sizes must be >= 0, got val={val_size} test={test_size}")
    collector = _groups(items, previous)
    result = sciq_split_groups(
        collector.groups,
        kept=collector.kept,
        val_size=val_size,
        test_size=test_size,
        seed=seed,
        previous=previous,
        items=items,
    )
    check_disjoint(items, result)
    return result


def sciq_split_groups(
    groups: Mapping[str, GroupStats],
    *,
    kept: int = 0,
    val_size: int = SCIQ_VAL_SIZE,
    test_size: int = SCIQ_TEST_SIZE,
    seed: int = 0,
    previous: Optional[PreviousAssignment] = None,
    items: Optional[Sequence[SplitItem]] = None,
    clusters: Optional[Mapping[str, str]] = None,
) -> SplitAssignment:
    """:func:`sciq_split` from per-document aggregates (see :func:`group_split_groups`, also for
    ``clusters``)."""
    if val_size < 0 or test_size < 0:
        raise SplitError(f"sciq_split: sizes must be >= 0, got val={val_size} test={test_size}")
    documents = groups
    groups = merge_groups(groups, clusters) if clusters else groups
    pinned = _fixed_groups(groups, previous)
    room = {"val": val_size, "test": test_size}
    for doc, split in pinned.items():
        if split in room:
            room[split] -= groups[doc].size
    shared = _shared_groups(groups, previous)
    for doc in shared:
        for split, n in groups[doc].previous.items():
            if split in room:
                room[split] -= n
    rng = random.Random(seed)
    free = sorted(doc for doc in groups if doc not in pinned and doc not in shared)
    rng.shuffle(free)
    doc_split = dict(pinned)
    for doc in free:
        size = groups[doc].size
        for split in ("val", "test"):
            if size <= room[split]:
                doc_split[doc] = split
                room[split] -= size
                break
        else:
            doc_split[doc] = "train"
    if room["val"] > 0 or room["test"] > 0:
        logger.warning("sciq_split: could not fill val/test exactly; %s items short", room)
    return _summarize(
        documents,
        _expand(doc_split, clusters),
        mode="sciq",
        seed=seed,
        target_ratios=None,
        target_sizes={"val": val_size, "test": test_size},
        kept=kept,
        previous=previous,
        items=items,
    )


def check_disjoint(items: Iterable[SplitItem], assignment: SplitAssignment) -> None:
    """Refuse a split in which a document appears in two splits or an item is missing.

    The documents a source dataset's own split shares (``assignment.shared_documents``) are reported
    there and not refused.

    Raises:
        SplitLeakError: names the document, its splits and one item id per split.
        SplitError: an item has no split or an unknown one.
    """
    seen: dict[str, dict[str, str]] = defaultdict(dict)
    for item in items:
        split = assignment.items.get(item.id)
        if split is None:
            raise SplitError(f"item {item.id!r} (document {item.group!r}) has no split")
        if split not in SPLITS:
            raise SplitError(f"item {item.id!r}: unknown split {split!r}")
        seen[item.group].setdefault(split, item.id)
    for doc, by_split in seen.items():
        if len(by_split) > 1 and doc not in assignment.shared_documents:
            examples = ", ".join(f"{s}: {i}" for s, i in sorted(by_split.items()))
            raise SplitLeakError(f"document {doc!r} appears in {len(by_split)} splits ({examples})")
