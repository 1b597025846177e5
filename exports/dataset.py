"""The dataset step of an export: stored QA pairs -> release records (the only Django part of exports).

Formatters, writers, splits and the card (``exports.release``) never see a model; this module decides
which pairs a release holds and turns them into :class:`QARecord` / :class:`MCQRecord` values.
Rejected pairs are left out; pairs written by crowd workers carry the worker's pseudonym, never a
platform id. :class:`PairRecords` reads a selection in chunks, so a release of any size is built
without holding its pairs in memory; the other helpers take the selection (a queryset) and read it
in bounded chunks too. For SciQ-style pairs, :func:`suggestions_for` also reads the stage-2 suggestion log
(offered model suggestions, which validators kept them, worker-written distractors).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import weakref
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

from django.db import connection
from django.db.models import Case, CharField, F, Q, QuerySet, Value, When
from django.db.models.functions import Cast, Collate, Concat

from annotation import question_types as qt
from annotation.models import Assignment, Batch, Corpus, Distractor, Document, QAPair
from exports.card import CardInputs
from exports.model_loop import model_fields, options_only_fields
from exports.original_formats import SourceDocument
from exports.records import MCQRecord, QARecord, RecordStream
from exports.splits import PreviousAssignment
from exports.statistics import DocumentInfo, count_tokens
from exports.suggestions import ItemSuggestions, ReleasedDistractor, ShownSuggestion

Record = Union[QARecord, MCQRecord]


def pairs_for(
    corpus: Optional[Corpus] = None,
    batch: Optional[Batch] = None,
    batches: Sequence[Batch] = (),
) -> QuerySet[QAPair]:
    """QA pairs a release of a corpus or of batches holds: everything not rejected.

    For batches (``batch`` and/or ``batches``), only pairs from approved assignments are released.
    """
    pairs = QAPair.objects.exclude(status=QAPair.Status.REJECTED)
    if corpus is not None:
        pairs = pairs.filter(corpus=corpus)
    chosen = [b.pk for b in ([batch] if batch is not None else []) + list(batches)]
    if chosen:
        pairs = pairs.filter(assignment__hit__batch__in=chosen, assignment__status=Assignment.Status.APPROVED)
    return (
        pairs.select_related("document", "passage", "assignment__worker", "model_check")
        .prefetch_related("spans", "steps", "distractors", "validations", "options_only_checks")
        .order_by("pk")
    )


def item_id(qa: QAPair) -> str:
    """The release id of a pair: its source id when imported, else ``crowdqa-<pk>``."""
    return qa.external_id or f"crowdqa-{qa.pk}"


PAIR_CHUNK = 1000
"""Pairs read (with their spans, steps and distractors) per database round trip."""

RECORD_DEFERRED = (
    "document__text",
    "document__page_starts",
    "document__metadata",
    "assignment__answers",
    "assignment__draft",
    "assignment__draft_revisions",
    "assignment__platform_meta",
)
"""Columns of a pair's joined rows that its record never reads (:func:`record_for`).

A syllabus text is tens of kilobytes and is joined to every one of its pairs, and an assignment's
answers hold the whole submitted form; reading them per pair would cost a release's reading time and
memory many times over for nothing.
"""


def _check_one_shape(pairs: QuerySet[QAPair]) -> None:
    """Refuse a selection that mixes syllabus-style and multiple-choice pairs.

    Raises:
        ValueError: both shapes are selected (one release, one shape).
    """
    plain = _plain(pairs)
    if plain.filter(question_type=qt.SCIQ).exists() and plain.exclude(question_type=qt.SCIQ).exists():
        raise ValueError(
            "the selection mixes syllabus QA pairs and multiple-choice questions; export them apart"
        )


def record_for(qa: QAPair) -> Record:
    """The release record of one pair (its spans, steps and distractors prefetched)."""
    worker = qa.assignment.worker.pseudonym if qa.assignment_id else None
    if qa.question_type == qt.SCIQ:
        return MCQRecord(
            id=item_id(qa),
            question=qa.question,
            correct_answer=qa.answer,
            distractors=tuple(d.text for d in _released_distractors(qa)),
            support=qa.passage.text if qa.passage_id else "",
            document_id=f"passage-{qa.passage_id}" if qa.passage_id else "",
            worker=worker,
            extra=options_only_fields(qa),
        )
    name = qa.document.name if qa.document_id else ""
    return QARecord(
        id=item_id(qa),
        syllabus_name=name,
        question_type=qa.question_type,
        question=qa.question,
        answer=qa.answer,
        answer_spans=_by_position(qa.spans.all()),
        reasoning_steps=_by_position(qa.steps.all()),
        worker=worker,
        document_id=name,
        extra=model_fields(qa),
    )


def records_for(pairs: Sequence[QAPair]) -> list[Record]:
    """Turn pairs into release records.

    Raises:
        ValueError: when syllabus-style and multiple-choice pairs are mixed (one release, one shape).
    """
    kinds = {qa.question_type == qt.SCIQ for qa in pairs}
    if len(kinds) > 1:
        raise ValueError(
            "the selection mixes syllabus QA pairs and multiple-choice questions; export them apart"
        )
    return [record_for(qa) for qa in pairs]


def _plain(pairs: QuerySet[QAPair]) -> QuerySet[QAPair]:
    """The selection without its related-row loading and ordering (for id and value queries)."""
    return pairs.prefetch_related(None).select_related(None).order_by()


def _item_id_key() -> Any:
    """The release id (:func:`item_id`) as a database expression ordered as Python orders strings.

    Python compares strings by code point; UTF-8 bytes compare the same way, and so do SQLite's
    ``BINARY`` and PostgreSQL's ``C`` collations.
    """
    key = Case(
        When(external_id="", then=Concat(Value("crowdqa-"), Cast("pk", CharField()))),
        default=F("external_id"),
        output_field=CharField(),
    )
    return Collate(key, "C" if connection.vendor == "postgresql" else "BINARY")


class PairRecords(RecordStream):
    """The release records of a pair selection, read from the database in chunks, in release order.

    The order is taken once (pair ids only, 8 bytes a pair); the first pass then reads the pairs
    :data:`PAIR_CHUNK` at a time with their spans, steps and distractors, so memory does not grow
    with the selection. A release takes several passes (survey, leak check, writing); building a
    record from its ORM rows costs far more than reading it back, so the first complete pass also
    writes every record to a temporary file (:class:`_RecordSpill`) and later passes read that file.
    Every pass therefore sees the same records, even if the database changes meanwhile.

    Args:
        pairs: the selection (:func:`pairs_for`).
        source_order: the order of the source files (:func:`in_source_order`) instead of by release id.

    Raises:
        ValueError: syllabus-style and multiple-choice pairs are mixed.
    """

    def __init__(self, pairs: QuerySet[QAPair], *, source_order: bool = False) -> None:
        _check_one_shape(pairs)
        self.pairs = pairs
        self.sorted_by_id = not source_order
        self._order: Optional[array[int]] = None
        self._spill: Optional[_RecordSpill] = None

    def order(self) -> array[int]:
        """Pair primary keys in release order."""
        if self._order is None:
            ids = _plain(self.pairs)
            if self.sorted_by_id:
                keys = ids.order_by(_item_id_key(), "pk").values_list("pk", flat=True)
                self._order = array("q", keys.iterator(chunk_size=10_000))
            else:  # the source rows are in the metadata: ordered here (a tuple a pair, briefly)
                rows = ids.values_list("pk", "metadata").iterator(chunk_size=10_000)
                self._order = array("q", (pk for _, pk in sorted((_source_key(pk, m), pk) for pk, m in rows)))
        return self._order

    def __len__(self) -> int:
        return len(self.order())

    def pair_chunks(self) -> Iterator[list[QAPair]]:
        """The selected pairs in release order, :data:`PAIR_CHUNK` at a time, with related rows loaded."""
        order = self.order()
        for start in range(0, len(order), PAIR_CHUNK):
            chunk = order[start : start + PAIR_CHUNK]
            selected = self.pairs.filter(pk__in=list(chunk)).defer(*RECORD_DEFERRED).order_by()
            loaded = {qa.pk: qa for qa in selected}
            yield [loaded[pk] for pk in chunk if pk in loaded]

    def __iter__(self) -> Iterator[Record]:
        if self._spill is not None:
            yield from self._spill
            return
        spill = _RecordSpill()
        for chunk in self.pair_chunks():
            for qa in chunk:
                record = record_for(qa)
                spill.add(record)
                yield record
        spill.finish()
        self._spill = spill


class _RecordSpill:
    """Records written one by one to a private temporary file, read back in order by any number of passes.

    The file is removed when the spill is garbage-collected (or at exit); an unfinished spill (a pass
    abandoned half-way) is never read.
    """

    def __init__(self) -> None:
        handle, name = tempfile.mkstemp(prefix="crowdqa-records-", suffix=".pickle")
        self.path = Path(name)
        self._file: Optional[BinaryIO] = os.fdopen(handle, "wb")
        self._cleanup = weakref.finalize(self, self.path.unlink, missing_ok=True)

    def add(self, record: Record) -> None:
        assert self._file is not None, "the spill is finished"
        pickle.dump(record, self._file, protocol=pickle.HIGHEST_PROTOCOL)

    def finish(self) -> None:
        assert self._file is not None, "the spill is finished"
        self._file.close()
        self._file = None

    def __iter__(self) -> Iterator[Record]:
        with self.path.open("rb") as handle:
            while True:
                try:
                    yield pickle.load(handle)  # noqa: S301 (this process wrote the file, mode 0600)
                except EOFError:
                    return


def _released_distractors(qa: QAPair) -> list[Distractor]:
    """The wrong options a release gives ``qa``: its selected distractors, by origin then position."""
    return sorted((d for d in qa.distractors.all() if d.selected), key=lambda d: (d.origin, d.position))


def suggestions_for(pairs: Iterable[QAPair]) -> dict[str, ItemSuggestions]:
    """The stage-2 suggestion log of every SciQ-style pair that was offered suggestions or validated.

    The offered suggestions are the pair's model rows without a validation (what every validator saw,
    annotation/hits/sciq_distractor.py); a validator's pick is a per-validation copy with the same rank
    and text. Pairs with neither (e.g. imported SciQ questions) get no log line.

    Args:
        pairs: pairs from :func:`pairs_for` (distractors and validations prefetched); see
            :func:`suggestions_of_selection` for a whole selection read in chunks.

    Returns:
        Release item id -> :class:`~exports.suggestions.ItemSuggestions`.
    """
    logs: dict[str, ItemSuggestions] = {}
    for qa in pairs:
        if qa.question_type != qt.SCIQ:
            continue
        rows = list(qa.distractors.all())
        offered = sorted(
            (d for d in rows if d.origin == Distractor.Origin.MODEL and d.validation_id is None),
            key=lambda d: (d.model_rank is None, d.model_rank or 0, d.position),
        )
        validations = len(qa.validations.all())
        if not offered and not validations:
            continue
        picks: dict[tuple[Optional[int], str], int] = {}
        for d in rows:
            if d.origin == Distractor.Origin.MODEL and d.validation_id is not None:
                key = (d.model_rank, d.text)
                picks[key] = picks.get(key, 0) + 1
        logs[item_id(qa)] = ItemSuggestions(
            item_id=item_id(qa),
            validations=validations,
            shown=tuple(
                ShownSuggestion(
                    text=d.text,
                    score=d.model_score,
                    rank=d.model_rank,
                    model_version=d.model_version,
                    picked_by=picks.get((d.model_rank, d.text), 0),
                )
                for d in offered
            ),
            distractors=tuple(
                ReleasedDistractor(
                    text=d.text,
                    origin=d.origin,
                    rank=d.model_rank if d.origin == Distractor.Origin.MODEL else None,
                )
                for d in _released_distractors(qa)
            ),
        )
    return logs


def _by_position(items: Iterable[Any]) -> tuple[str, ...]:
    """Texts by their position, "" for a gap (the release keeps every span in its column)."""
    texts = {item.position: item.text for item in items}
    return tuple(texts.get(i, "") for i in range(max(texts) + 1)) if texts else ()


def suggestions_of_selection(pairs: QuerySet[QAPair]) -> dict[str, ItemSuggestions]:
    """:func:`suggestions_for` of a selection, reading only the pairs that can have a log, in chunks.

    Memory grows with the questions that were offered suggestions or validated, not with the release.
    """
    candidates = (
        _plain(pairs)
        .filter(question_type=qt.SCIQ)
        .filter(Q(distractors__origin=Distractor.Origin.MODEL) | Q(validations__isnull=False))
    )
    ids = array("q", candidates.order_by("pk").values_list("pk", flat=True).distinct().iterator(10_000))
    logs: dict[str, ItemSuggestions] = {}
    for start in range(0, len(ids), PAIR_CHUNK):
        chunk = pairs.filter(pk__in=list(ids[start : start + PAIR_CHUNK])).order_by("pk")
        logs.update(suggestions_for(chunk))
    return logs


def original_assignment(pairs: Iterable[QAPair] | QuerySet[QAPair]) -> PreviousAssignment:
    """The split each pair had in its source release (``--use-original-splits``).

    Marked ``original``: a document the source's own split shares between splits is reported, not refused.
    """
    if isinstance(pairs, QuerySet):
        rows = _plain(pairs).exclude(original_split="").values_list("pk", "external_id", "original_split")
        return PreviousAssignment(
            items={external or f"crowdqa-{pk}": split for pk, external, split in rows.iterator(10_000)},
            original=True,
        )
    return PreviousAssignment(
        items={item_id(qa): qa.original_split for qa in pairs if qa.original_split}, original=True
    )


def _source_key(pk: int, metadata: Any) -> tuple[int, int, int]:
    row = (metadata or {}).get("source_row") if isinstance(metadata, dict) else None
    return (0, row, pk) if isinstance(row, int) else (1, 0, pk)


def in_source_order(pairs: Sequence[QAPair]) -> list[QAPair]:
    """Pairs in the order of their source files (``metadata["source_row"]``, set on import), else by pk.

    Why: an original-split release writes each split's rows in the published order, so its files equal
    the published ones byte for byte (the authors' bootstrap and debug subsets depend on row order).
    Pairs imported before the row was recorded, and crowd pairs, keep their creation (pk) order.
    """
    return sorted(pairs, key=lambda qa: _source_key(qa.pk, qa.metadata))


def _documents(pairs: QuerySet[QAPair]) -> QuerySet[Document]:
    """The documents the selected syllabus-style pairs refer to, by pk."""
    return Document.objects.filter(
        pk__in=_plain(pairs)
        .exclude(question_type=qt.SCIQ)
        .filter(document__isnull=False)
        .values("document_id")
    ).order_by("pk")


class SourceDocuments:
    """The syllabi a selection's syllabus-style pairs refer to, read one at a time when iterated.

    Falsy when there is none (a release then writes no ``syllabi/`` folder).
    """

    def __init__(self, pairs: QuerySet[QAPair]) -> None:
        self.documents = _documents(pairs)

    def __bool__(self) -> bool:
        return self.documents.exists()

    def __iter__(self) -> Iterator[SourceDocument]:
        seen: set[str] = set()
        for document in self.documents.iterator(chunk_size=100):
            if document.name not in seen:
                seen.add(document.name)
                yield _source_document(document)


def _source_document(document: Document) -> SourceDocument:
    meta = {k: str(document.metadata.get(k) or "") for k in ("course", "major", "area", "university")}
    meta["num_pages"] = str(document.metadata.get("num_pages") or document.num_pages)
    row = document.metadata.get("meta_row")
    return SourceDocument(
        name=document.name, text=document.text, meta=meta, meta_row=row if isinstance(row, int) else None
    )


def source_documents_for(pairs: Sequence[QAPair] | QuerySet[QAPair]) -> Iterable[SourceDocument]:
    """The syllabi that syllabus-style pairs refer to, for the authors' ``syllabi/`` layout."""
    if isinstance(pairs, QuerySet):
        return SourceDocuments(pairs)
    documents: dict[str, SourceDocument] = {}
    for qa in pairs:
        if qa.question_type == qt.SCIQ or not qa.document_id or qa.document.name in documents:
            continue
        documents[qa.document.name] = _source_document(qa.document)
    return list(documents.values())


def _median(counts: Counter[float]) -> Optional[float]:
    """The median of values given as value -> occurrences (as ``statistics.median`` of them all)."""
    n = sum(counts.values())
    if not n:
        return None
    values = sorted(counts)
    middle = (n - 1) // 2, n // 2
    found: list[float] = []
    seen = 0
    for value in values:
        seen += counts[value]
        while len(found) < 2 and seen > middle[len(found)]:
            found.append(value)
    return found[0] if n % 2 else (found[0] + found[1]) / 2


def card_inputs_for(pairs: QuerySet[QAPair], corpus: Optional[Corpus]) -> CardInputs:
    """Facts for the dataset card that the records cannot tell: licence, pages, crowd work.

    Read with bounded queries: document texts one at a time, working times as a histogram.
    """
    documents: dict[str, DocumentInfo] = {}
    linked_ids = _plain(pairs).filter(document__isnull=False).values("document_id")
    linked = Document.objects.filter(pk__in=linked_ids)
    for document in linked.order_by("pk").iterator(chunk_size=100):
        if document.name not in documents:
            pages = document.metadata.get("num_pages") or document.num_pages
            documents[document.name] = DocumentInfo(pages=int(pages), tokens=count_tokens(document.text))
    seconds: Counter[float] = Counter(
        value
        for value in _plain(pairs)
        .filter(assignment__isnull=False)
        .values_list("assignment__time_on_task_seconds", flat=True)
        .iterator(10_000)
        if value
    )
    from exports.work_costs import release_work_costs

    pay, costs = release_work_costs(pairs)
    total = flagged = 0
    for flags in _plain(pairs).values_list("qc_flags", flat=True).iterator(10_000):
        total += 1
        flagged += bool(flags)
    return CardInputs(
        title=corpus.name if corpus else None,
        description=corpus.description if corpus else None,
        license=(corpus.license if corpus and corpus.license else "unstated"),
        documents=documents,
        median_seconds=_median(seconds),
        qc_rejection_rates={"overall": flagged / total} if total and flagged else {},
        pay_by_kind=pay,
        cost_by_question_type=costs,
    )
