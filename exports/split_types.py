"""The data of a split: items, documents and their joins, an earlier release's assignment, the result.

:mod:`exports.splits` computes splits over these types; they live apart so that the release builder,
the export service and the checks can name them without the splitting algorithms, and so that each
module stays short. Nothing here imports Django.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Optional

from annotation.question_types import SPLITS


class SplitError(ValueError):
    """Bad split input (ratios, duplicate ids, conflicting earlier assignment)."""


class SplitLeakError(SplitError):
    """A document has items in more than one split."""


@dataclass(frozen=True)
class SplitItem:
    """What the splitter needs to know about one item.

    Attributes:
        id: item id (unique).
        group: source document id; all items of a group share a split.
        stratum: label whose mix each split should keep (question type).
    """

    id: str
    group: str
    stratum: str = ""


@dataclass(frozen=True)
class PreviousAssignment:
    """An earlier release's assignment, to be kept.

    Attributes:
        items: item id -> split for every item of the earlier release.
        documents: document id -> split.
        original: the assignment is a source dataset's own split (``--use-original-splits``). A document
            it puts in two splits (SciQ has passages backing questions in train and test) then keeps each
            kept item in its own split and is reported in ``SplitAssignment.shared_documents`` instead of
            refused; a new item of such a document cannot be placed and is refused.
    """

    items: Mapping[str, str] = field(default_factory=dict)
    documents: Mapping[str, str] = field(default_factory=dict)
    original: bool = False


@dataclass
class GroupStats:
    """What the splitter needs to know about one document: counts, not the items themselves.

    Why: a release of a million pairs is split from these per-document aggregates (bounded by the
    number of documents), so the items never have to be held in memory at once.

    Attributes:
        size: items of the document.
        strata: stratum -> items.
        previous: split of the previous assignment -> items of the document it places.
        previous_strata: (previous split, stratum) -> items.
        first_new: the first item (in input order) the previous assignment does not place, or None.
    """

    size: int = 0
    strata: Counter[str] = field(default_factory=Counter)
    previous: Counter[str] = field(default_factory=Counter)
    previous_strata: Counter[tuple[str, str]] = field(default_factory=Counter)
    first_new: Optional[str] = None

    def vector(self, strata: Sequence[str]) -> list[int]:
        """Items per stratum, in the order of ``strata``."""
        return [self.strata.get(t, 0) for t in strata]


def question_key(question: str, answer: str) -> str:
    """The key under which two multiple-choice items count as the same question: question and answer
    with case and spacing ignored. The release's leakage check (:mod:`exports.checks`) uses the same key,
    so the splitter keeps together exactly what the check would call leakage."""
    return " ".join(question.casefold().split()) + "\n" + " ".join(answer.casefold().split())


class GroupCollector:
    """Accumulates :class:`GroupStats` per document from items seen one at a time.

    Documents that must share a split although they are different documents (two SciQ passages each
    backing the same question with the same answer) are joined with :meth:`link` or :meth:`add_question`;
    :meth:`clusters` then says which documents the splitter draws as one.
    """

    def __init__(self, previous: Optional[PreviousAssignment] = None) -> None:
        self.previous = previous
        self.groups: dict[str, GroupStats] = {}
        self.kept = 0
        self.links: list[tuple[str, str]] = []
        self._questions: dict[str, str] = {}

    def add_question(self, document: str, question: str, answer: str) -> None:
        """Note a multiple-choice question of ``document``: a document asking the same question with the
        same answer (see :func:`question_key`) as an earlier one is linked to it."""
        if not question.strip():
            return
        first = self._questions.setdefault(question_key(question, answer), document)
        if first != document:
            self.link(first, document)

    def link(self, a: str, b: str) -> None:
        """Ask for documents ``a`` and ``b`` to land in one split."""
        if a != b:
            self.links.append((a, b))

    def clusters(self) -> dict[str, str]:
        """Document -> the document its cluster is drawn as (itself for an unlinked document).

        A link is dropped when it cannot hold: a document an original assignment shares between splits,
        or two documents an earlier release already put in different splits (old items never move).
        """
        return join_documents(self.groups, self.links)

    def add(self, item: SplitItem) -> None:
        """Count one item into its document's aggregates."""
        stats = self.groups.get(item.group)
        if stats is None:
            stats = self.groups[item.group] = GroupStats()
        stats.size += 1
        stats.strata[item.stratum] += 1
        split = self.previous.items.get(item.id) if self.previous is not None else None
        if split is not None:
            stats.previous[split] += 1
            stats.previous_strata[(split, item.stratum)] += 1
            self.kept += 1
        elif stats.first_new is None:
            stats.first_new = item.id


def join_documents(groups: Mapping[str, GroupStats], links: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Union-find over ``links``: document -> its cluster's representative document.

    Only documents in ``groups`` are joined, and a link is skipped when the joined cluster would hold
    items an earlier assignment put in two splits (or a document already shared between splits).
    """
    parent: dict[str, str] = {}
    placed: dict[str, set[str]] = {}

    def root(doc: str) -> str:
        while parent.get(doc, doc) != doc:
            parent[doc] = parent.get(parent[doc], parent[doc])
            doc = parent[doc]
        return doc

    for a, b in links:
        if a not in groups or b not in groups:
            continue
        ra, rb = root(a), root(b)
        if ra == rb:
            continue
        splits_a = placed.get(ra, set(groups[ra].previous))
        splits_b = placed.get(rb, set(groups[rb].previous))
        if len(splits_a | splits_b) > 1:
            continue
        if ra > rb:
            ra, rb = rb, ra
            splits_a, splits_b = splits_b, splits_a
        parent[rb] = ra
        placed[ra] = splits_a | splits_b
    return {doc: root(doc) for doc in groups}


def merge_groups(groups: Mapping[str, GroupStats], clusters: Mapping[str, str]) -> dict[str, GroupStats]:
    """The aggregates of each cluster of documents (:func:`join_documents`), keyed by its representative."""
    merged: dict[str, GroupStats] = {}
    for doc, stats in groups.items():
        key = clusters.get(doc, doc)
        into = merged.get(key)
        if into is None:
            merged[key] = GroupStats(
                stats.size,
                Counter(stats.strata),
                Counter(stats.previous),
                Counter(stats.previous_strata),
                stats.first_new,
            )
            continue
        into.size += stats.size
        into.strata.update(stats.strata)
        into.previous.update(stats.previous)
        into.previous_strata.update(stats.previous_strata)
        into.first_new = into.first_new or stats.first_new
    return merged


@dataclass(frozen=True)
class SplitAssignment:
    """The result of a split.

    Attributes:
        items: item id -> split.
        documents: document id -> split.
        mode: ``"group"`` or ``"sciq"``.
        seed: the seed used.
        target_ratios: the requested ratios (group mode) or None.
        target_sizes: requested val/test sizes (sciq mode) or None.
        counts: items per split.
        achieved_ratios: items per split / all items, rounded to 4 decimals.
        document_counts: documents per split.
        stratum_counts: per split, items per stratum.
        kept_items: items whose split came from the previous assignment.
        shared_documents: document -> split -> items, for the documents that the source dataset's own
            split puts in more than one split (only with an original assignment; empty otherwise).
    """

    items: Mapping[str, str]
    documents: Mapping[str, str]
    mode: str
    seed: int
    target_ratios: Optional[Mapping[str, float]]
    target_sizes: Optional[Mapping[str, int]]
    counts: Mapping[str, int]
    achieved_ratios: Mapping[str, float]
    document_counts: Mapping[str, int]
    stratum_counts: Mapping[str, Mapping[str, int]]
    kept_items: int = 0
    shared_documents: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    previous_items: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def split_of(self, item_id: str) -> str:
        """Return the split of one item (KeyError when it was not split)."""
        return self.items[item_id]

    def split_for(self, item_id: str, document: str) -> str:
        """The split of an item of ``document``, also when ``items`` was not listed (a streamed split).

        Every item follows its document, except in the documents a source's own split shares: there
        each item keeps its original split.
        """
        split = self.items.get(item_id)
        if split is not None:
            return split
        if document in self.shared_documents:
            return self.previous_items[item_id]
        return self.documents[document]

    def to_dict(self) -> dict[str, object]:
        """Summary for manifests and command output (no per-item lists)."""
        return {
            "mode": self.mode,
            "seed": self.seed,
            "target_ratios": dict(self.target_ratios) if self.target_ratios else None,
            "target_sizes": dict(self.target_sizes) if self.target_sizes else None,
            "counts": dict(self.counts),
            "achieved_ratios": dict(self.achieved_ratios),
            "document_counts": dict(self.document_counts),
            "kept_items": self.kept_items,
            "shared_documents": {d: dict(c) for d, c in self.shared_documents.items()},
        }


def normalize_ratios(ratios: Sequence[float]) -> dict[str, float]:
    """Return ``{"train": r0, "val": r1, "test": r2}`` after checking three non-negative ratios summing to 1.

    Raises:
        SplitError: wrong count, a negative value, or a sum other than 1 (within 1e-6).
    """
    values = [float(r) for r in ratios]
    if len(values) != len(SPLITS):
        raise SplitError(f"ratios: expected 3 values (train, val, test), got {values}")
    if any(v < 0 for v in values):
        raise SplitError(f"ratios: negative value in {values}")
    if abs(sum(values) - 1.0) > 1e-6:
        raise SplitError(f"ratios: {values} sum to {sum(values):.6f}, not 1")
    return dict(zip(SPLITS, values, strict=False))
