"""The dataset step of an export: stored QA pairs -> release records (the only Django part of exports).

Formatters, writers, splits and the card (``exports.release``) never see a model; this module decides
which pairs a release holds and turns them into :class:`QARecord` / :class:`MCQRecord` values.
Rejected pairs are left out; pairs written by crowd workers carry the worker's pseudonym, never a
platform id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from statistics import median
from typing import Any, Optional, Union

from django.db.models import QuerySet

from annotation import question_types as qt
from annotation.models import Assignment, Batch, Corpus, QAPair
from exports.card import CardInputs
from exports.records import MCQRecord, QARecord
from exports.splits import PreviousAssignment
from exports.statistics import DocumentInfo, count_tokens

Record = Union[QARecord, MCQRecord]


def pairs_for(corpus: Optional[Corpus] = None, batch: Optional[Batch] = None) -> QuerySet[QAPair]:
    """QA pairs a release of a corpus or a batch holds: everything not rejected.

    For a batch, only pairs from approved assignments are released.
    """
    pairs = QAPair.objects.exclude(status=QAPair.Status.REJECTED)
    if corpus is not None:
        pairs = pairs.filter(corpus=corpus)
    if batch is not None:
        pairs = pairs.filter(assignment__hit__batch=batch, assignment__status=Assignment.Status.APPROVED)
    return (
        pairs.select_related("document", "passage", "assignment__worker")
        .prefetch_related("spans", "steps", "distractors")
        .order_by("pk")
    )


def item_id(qa: QAPair) -> str:
    """The release id of a pair: its source id when imported, else ``crowdqa-<pk>``."""
    return qa.external_id or f"crowdqa-{qa.pk}"


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
    records: list[Record] = []
    for qa in pairs:
        worker = qa.assignment.worker.pseudonym if qa.assignment_id else None
        if qa.question_type == qt.SCIQ:
            distractors = sorted(
                (d for d in qa.distractors.all() if d.selected), key=lambda d: (d.origin, d.position)
            )
            records.append(
                MCQRecord(
                    id=item_id(qa),
                    question=qa.question,
                    correct_answer=qa.answer,
                    distractors=tuple(d.text for d in distractors),
                    support=qa.passage.text if qa.passage_id else "",
                    document_id=f"passage-{qa.passage_id}" if qa.passage_id else "",
                    worker=worker,
                )
            )
        else:
            name = qa.document.name if qa.document_id else ""
            records.append(
                QARecord(
                    id=item_id(qa),
                    syllabus_name=name,
                    question_type=qa.question_type,
                    question=qa.question,
                    answer=qa.answer,
                    answer_spans=_by_position(qa.spans.all()),
                    reasoning_steps=_by_position(qa.steps.all()),
                    worker=worker,
                    document_id=name,
                )
            )
    return records


def _by_position(items: Iterable[Any]) -> tuple[str, ...]:
    """Texts by their position, "" for a gap (the release keeps every span in its column)."""
    texts = {item.position: item.text for item in items}
    return tuple(texts.get(i, "") for i in range(max(texts) + 1)) if texts else ()


def original_assignment(pairs: Sequence[QAPair]) -> PreviousAssignment:
    """The split each pair had in its source release (``--use-original-splits``)."""
    return PreviousAssignment(items={item_id(qa): qa.original_split for qa in pairs if qa.original_split})


def card_inputs_for(pairs: Sequence[QAPair], corpus: Optional[Corpus]) -> CardInputs:
    """Facts for the dataset card that the records cannot tell: licence, pages, crowd work."""
    documents: dict[str, DocumentInfo] = {}
    for qa in pairs:
        if qa.document_id and qa.document.name not in documents:
            pages = qa.document.metadata.get("num_pages") or qa.document.num_pages
            documents[qa.document.name] = DocumentInfo(
                pages=int(pages), tokens=count_tokens(qa.document.text)
            )
    seconds = [
        qa.assignment.time_on_task_seconds
        for qa in pairs
        if qa.assignment_id and qa.assignment.time_on_task_seconds
    ]
    flagged = sum(1 for qa in pairs if qa.qc_flags)
    return CardInputs(
        title=corpus.name if corpus else None,
        description=corpus.description if corpus else None,
        license=(corpus.license if corpus and corpus.license else "unstated"),
        documents=documents,
        median_seconds=median(seconds) if seconds else None,
        qc_rejection_rates={"overall": flagged / len(pairs)} if pairs and flagged else {},
    )
