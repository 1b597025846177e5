"""Write what the importers read into the database: idempotent, all-or-nothing.

Each import parses and validates its whole input first (``annotation.importers``), then writes in one
transaction. Rows are matched by their release id, so a second run of the same release changes nothing
and reports every row as unchanged; a changed row is updated in place with its spans and steps.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Optional, TypeVar

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction

from annotation import question_types as qt
from annotation.hashing import file_sha256
from annotation.importers.documents import DocumentRecord, expand_paths, read_document
from annotation.importers.errors import ImportDataError
from annotation.importers.mcq import MCQRow
from annotation.importers.syllabusqa import KnownPages, SyllabusRecord, read_syllabi
from annotation.importers.syllabusqa_csv import QARow, read_qa_rows
from annotation.models import (
    AnswerSpan,
    Corpus,
    Distractor,
    Document,
    Passage,
    QAPair,
    ReasoningStep,
    sha256_text,
)
from annotation.pages import page_of
from annotation.spans import NormalizedDocument, normalize_document

logger = logging.getLogger(__name__)

#: progress(stage, done, total): called as work advances; the commands draw bars with it.
Progress = Callable[[str, int, int], None]


def _no_progress(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class Counts:
    """Created / updated / unchanged counts of one kind of row."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "updated": self.updated, "unchanged": self.unchanged}


@dataclass
class ImportSummary:
    """What an import did; ``as_dict()`` is the JSON line the commands print."""

    corpus: str
    documents: Counts = field(default_factory=Counts)
    passages: Counts = field(default_factory=Counts)
    qa_pairs: Counts = field(default_factory=Counts)
    totals: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "documents": self.documents.as_dict(),
            "passages": self.passages.as_dict(),
            "qa_pairs": self.qa_pairs.as_dict(),
            **self.totals,
        }


def _get_corpus(name: str, **defaults: Any) -> Corpus:
    corpus, created = Corpus.objects.get_or_create(name=name, defaults=defaults)
    if not created:
        changed = [k for k, v in defaults.items() if getattr(corpus, k) != v and v]
        for key in changed:
            setattr(corpus, key, defaults[key])
        if changed:
            corpus.save(update_fields=changed)
    return corpus


def _attach_pdf(document: Document, pdf_path: Optional[Path], corpus: Corpus) -> bool:
    """Store the document's PDF in media storage unless the same file is already there."""
    if pdf_path is None:
        return False
    sha = file_sha256(pdf_path)
    if (
        document.pdf
        and document.metadata.get("pdf_sha256") == sha
        and default_storage.exists(document.pdf.name)
    ):
        return False
    target = f"pdfs/{corpus.name}/{sha[:16]}.pdf"
    if not default_storage.exists(target):
        with pdf_path.open("rb") as handle:
            target = default_storage.save(target, File(handle, name=pdf_path.name))
    document.pdf.name = target
    document.metadata = {**document.metadata, "pdf_sha256": sha, "pdf_file": pdf_path.name}
    return True


def _upsert_document(
    corpus: Corpus,
    existing: dict[str, Document],
    name: str,
    text: str,
    starts: Sequence[int],
    metadata: dict,
    split: str,
    pdf_path: Optional[Path],
    counts: Counts,
) -> Document:
    sha = sha256_text(text)
    document = existing.get(name)
    if document is None:
        document = Document(corpus=corpus, name=name)
        created = True
    else:
        created = False
    wanted_meta = {**document.metadata, **metadata}
    changed = (
        created
        or document.text_sha256 != sha
        or list(document.page_starts) != list(starts)
        or document.metadata != wanted_meta
        or document.original_split != split
    )
    if changed:
        document.text = text
        document.text_sha256 = sha
        document.page_starts = list(starts)
        document.metadata = wanted_meta
        document.original_split = split
        document.title = str(metadata.get("course", document.title or ""))
    pdf_changed = _attach_pdf(document, pdf_path, corpus)
    if changed or pdf_changed:
        document.save()
        if created:
            counts.created += 1
        else:
            counts.updated += 1
    else:
        counts.unchanged += 1
    existing[name] = document
    return document


# --- SyllabusQA ---------------------------------------------------------------------------------


def import_syllabusqa(
    root: Path,
    corpus_name: str = "syllabusqa",
    encoding: str = "mac_roman",
    progress: Progress = _no_progress,
) -> ImportSummary:
    """Import the SyllabusQA release: 63 syllabi (text, PDF, page offsets) and their QA pairs.

    Raises:
        ImportDataError: for malformed input; nothing is written then.
    """
    rows = read_qa_rows(root)
    names = {row.syllabus_name for row in rows}
    split_of: dict[str, str] = {}
    for row in rows:
        split_of.setdefault(row.syllabus_name, row.split)
    known = {
        d.name: KnownPages(d.text_sha256, d.metadata.get("pdf_sha256", ""), tuple(d.page_starts))
        for d in Document.objects.filter(corpus__name=corpus_name).only(
            "name", "text_sha256", "metadata", "page_starts"
        )
    }
    syllabi: list[SyllabusRecord] = []
    for i, record in enumerate(read_syllabi(root, names, encoding=encoding, known_pages=known), start=1):
        syllabi.append(record)
        progress("syllabi", i, len(names))

    summary = ImportSummary(corpus=corpus_name)
    with transaction.atomic():
        corpus = _get_corpus(
            corpus_name,
            kind=Corpus.Kind.SYLLABUS,
            description="SyllabusQA: course-logistics QA pairs over 63 real course syllabi (ACL 2024).",
            source="umass-ml4ed/SyllabusQA",
            license="unstated (research use; ask the authors before redistributing)",
        )
        existing = {d.name: d for d in corpus.documents.all()}
        documents: dict[str, Document] = {}
        for record in syllabi:
            documents[record.name] = _upsert_document(
                corpus,
                existing,
                record.name,
                record.text,
                record.page_starts,
                record.metadata,
                split_of.get(record.name, ""),
                record.pdf_path,
                summary.documents,
            )
        _write_syllabus_pairs(corpus, rows, documents, summary, progress)
    summary.totals = {
        "syllabi": len(syllabi),
        "qa_pairs_total": len(rows),
        "by_split": _count(row.split for row in rows),
        "by_type": _count(row.question_type for row in rows),
        "spans_located": summary.totals.get("spans_located", 0),
        "spans_total": summary.totals.get("spans_total", 0),
    }
    return summary


def _count(values: Iterable[str]) -> dict[str, int]:
    result: dict[str, int] = defaultdict(int)
    for value in values:
        result[value] += 1
    return dict(sorted(result.items()))


#: (position, text, start, end, page) of a span; position is the release column (0 = answer_span_1).
SpanSig = tuple[int, str, Optional[int], Optional[int], Optional[int]]
StepSig = tuple[int, str]
Children = TypeVar("Children")


def _locate_spans(row: QARow, document: Document, index: NormalizedDocument) -> list[SpanSig]:
    spans: list[SpanSig] = []
    for position, text in enumerate(row.spans):
        if not text:
            continue
        found = index.find(text)
        if found is None:
            spans.append((position, text, None, None, None))
        else:
            spans.append((position, text, found[0], found[1], page_of(document.page_starts, found[0])))
    return spans


@dataclass
class _PairWrites(Generic[Children]):
    """The questions of one import, sorted into new, changed and unchanged, each new or changed one with
    the child rows (answer spans and steps, distractors) written for it once the question has its id.

    A question is changed when a field differs from its row or its children differ from those stored.
    """

    corpus: Corpus
    new: list[tuple[QAPair, Children]] = field(default_factory=list)
    changed: list[tuple[QAPair, Children]] = field(default_factory=list)
    unchanged: int = 0

    def add(
        self,
        qa: Optional[QAPair],
        external_id: str,
        fields: dict[str, Any],
        children: Children,
        stored: Optional[Children],
    ) -> None:
        """File a row: ``qa`` is the stored question of ``external_id`` (None: new), ``stored`` the
        children stored for it."""
        if qa is None:
            self.new.append((QAPair(corpus=self.corpus, external_id=external_id, **fields), children))
        elif any(getattr(qa, k) != v for k, v in fields.items()) or stored != children:
            for key, value in fields.items():
                setattr(qa, key, value)
            self.changed.append((qa, children))
        else:
            self.unchanged += 1

    def save(self, batch_size: int) -> list[tuple[QAPair, Children]]:
        """Insert the new questions, save the changed ones; return both, ids filled, whose children are
        to be written again (the caller deletes the changed questions' old children)."""
        QAPair.objects.bulk_create([qa for qa, _ in self.new], batch_size=batch_size)
        for qa, _ in self.changed:
            qa.save()
        if any(qa.pk is None for qa, _ in self.new):
            # Backends without RETURNING ids on bulk insert: read the ids back by external id.
            external_ids = [qa.external_id for qa, _ in self.new]
            ids = dict(
                self.corpus.qa_pairs.filter(external_id__in=external_ids).values_list("external_id", "pk")
            )
            for qa, _ in self.new:
                qa.pk = ids[qa.external_id]
        return self.new + self.changed

    @property
    def changed_ids(self) -> list[int]:
        return [qa.pk for qa, _ in self.changed]


SyllabusChildren = tuple[list[SpanSig], list[StepSig]]


def _stored_syllabus_children(corpus: Corpus) -> dict[int, SyllabusChildren]:
    """Each stored question's answer spans and reasoning steps, in order (absent: none of either)."""
    stored: dict[int, SyllabusChildren] = defaultdict(lambda: ([], []))
    for span in AnswerSpan.objects.filter(qa_pair__corpus=corpus).order_by("qa_pair_id", "position"):
        stored[span.qa_pair_id][0].append((span.position, span.text, span.start, span.end, span.page))
    for step in ReasoningStep.objects.filter(qa_pair__corpus=corpus).order_by("qa_pair_id", "position"):
        stored[step.qa_pair_id][1].append((step.position, step.text))
    return stored


def _write_syllabus_pairs(
    corpus: Corpus,
    rows: list[QARow],
    documents: dict[str, Document],
    summary: ImportSummary,
    progress: Progress,
) -> None:
    existing = {qa.external_id: qa for qa in corpus.qa_pairs.all()}
    stored = _stored_syllabus_children(corpus)
    indexes = {name: normalize_document(doc.text) for name, doc in documents.items()}
    writes: _PairWrites[SyllabusChildren] = _PairWrites(corpus)
    located = 0
    total_spans = 0
    source_rows: dict[str, int] = defaultdict(int)
    for i, row in enumerate(rows, start=1):
        source_row = source_rows[row.split]
        source_rows[row.split] += 1
        document = documents[row.syllabus_name]
        spans = _locate_spans(row, document, indexes[row.syllabus_name])
        total_spans += len(spans)
        located += sum(1 for s in spans if s[2] is not None)
        steps = [(position, text) for position, text in enumerate(row.steps) if text]
        qa = existing.get(row.id)
        fields = {
            "document_id": document.pk,
            "question_type": row.question_type,
            "question": row.question,
            "answer": row.answer,
            "original_split": row.split,
            # The row's position in its split file, so an original-split release keeps the published order.
            "metadata": {**(qa.metadata if qa is not None else {}), "source_row": source_row},
        }
        writes.add(qa, row.id, fields, (spans, steps), stored.get(qa.pk, ([], [])) if qa else None)
        if i % 500 == 0 or i == len(rows):
            progress("qa_pairs", i, len(rows))

    written = writes.save(batch_size=1000)
    AnswerSpan.objects.filter(qa_pair_id__in=writes.changed_ids).delete()
    ReasoningStep.objects.filter(qa_pair_id__in=writes.changed_ids).delete()
    AnswerSpan.objects.bulk_create(
        [
            AnswerSpan(qa_pair_id=qa.pk, position=p, text=t, start=s, end=e, page=pg)
            for qa, (spans, _) in written
            for p, t, s, e, pg in spans
        ],
        batch_size=2000,
    )
    ReasoningStep.objects.bulk_create(
        [ReasoningStep(qa_pair_id=qa.pk, position=p, text=t) for qa, (_, steps) in written for p, t in steps],
        batch_size=2000,
    )
    summary.qa_pairs.created += len(writes.new)
    summary.qa_pairs.updated += len(writes.changed)
    summary.qa_pairs.unchanged += writes.unchanged
    summary.totals["spans_located"] = located
    summary.totals["spans_total"] = total_spans


# --- Multiple-choice datasets (SciQ, ARC) ---------------------------------------------------------


def import_mcq(
    records: list[MCQRow],
    corpus_name: str,
    corpus_defaults: dict[str, Any],
    progress: Progress = _no_progress,
) -> ImportSummary:
    """Import multiple-choice questions with their distractors and (when released) their passages.

    Passages are deduplicated by text within the corpus; questions are matched by release id.
    """
    summary = ImportSummary(corpus=corpus_name)
    with transaction.atomic():
        corpus = _get_corpus(corpus_name, **corpus_defaults)
        passages = _write_passages(corpus, records, summary)
        existing = {qa.external_id: qa for qa in corpus.qa_pairs.all()}
        stored: dict[int, list[str]] = defaultdict(list)
        for d in Distractor.objects.filter(
            qa_pair__corpus=corpus, origin=Distractor.Origin.ORIGINAL
        ).order_by("qa_pair_id", "position"):
            stored[d.qa_pair_id].append(d.text)
        writes: _PairWrites[list[str]] = _PairWrites(corpus)
        for i, record in enumerate(records, start=1):
            passage = passages.get(sha256_text(record.passage)) if record.passage.strip() else None
            fields = {
                "question_type": qt.SCIQ,
                "question": record.question,
                "answer": record.answer,
                "original_split": record.split,
                "passage_id": passage.pk if passage else None,
                "metadata": record.metadata,
            }
            qa = existing.get(record.id)
            writes.add(qa, record.id, fields, list(record.distractors), stored.get(qa.pk) if qa else None)
            if i % 1000 == 0 or i == len(records):
                progress("questions", i, len(records))
        written = writes.save(batch_size=2000)
        Distractor.objects.filter(
            qa_pair_id__in=writes.changed_ids, origin=Distractor.Origin.ORIGINAL
        ).delete()
        Distractor.objects.bulk_create(
            [
                Distractor(
                    qa_pair_id=qa.pk, text=text, origin=Distractor.Origin.ORIGINAL, position=p, selected=True
                )
                for qa, texts in written
                for p, text in enumerate(texts)
            ],
            batch_size=5000,
        )
        summary.qa_pairs.created = len(writes.new)
        summary.qa_pairs.updated = len(writes.changed)
        summary.qa_pairs.unchanged += writes.unchanged
    summary.totals = {
        "questions_total": len(records),
        "by_split": _count(r.split for r in records),
        "with_passage": sum(1 for r in records if r.passage.strip()),
        "without_passage": sum(1 for r in records if not r.passage.strip()),
        "distractors_total": sum(len(r.distractors) for r in records),
    }
    return summary


def _write_passages(corpus: Corpus, records: list[MCQRow], summary: ImportSummary) -> dict[str, Passage]:
    passages = {p.text_sha256: p for p in corpus.passages.all()}
    new: list[Passage] = []
    position = max((p.position for p in passages.values()), default=-1) + 1
    for record in records:
        if not record.passage.strip():
            continue
        sha = sha256_text(record.passage)
        if sha in passages:
            continue
        passage = Passage(corpus=corpus, text=record.passage, text_sha256=sha, position=position)
        position += 1
        passages[sha] = passage
        new.append(passage)
    Passage.objects.bulk_create(new, batch_size=2000)
    if any(p.pk is None for p in new):
        ids = dict(corpus.passages.values_list("text_sha256", "pk"))
        for passage in new:
            passage.pk = ids[passage.text_sha256]
    summary.passages.created = len(new)
    summary.passages.unchanged = len(passages) - len(new)
    return passages


# --- Plain documents ------------------------------------------------------------------------------


def import_documents(
    corpus_name: str,
    paths: Sequence[Path],
    min_paragraph_chars: int = 40,
    document_filter: Optional[Callable[[DocumentRecord], Optional[DocumentRecord]]] = None,
    progress: Progress = _no_progress,
) -> ImportSummary:
    """Import text and PDF files as documents cut into paragraphs (passages).

    Args:
        corpus_name: created when missing (kind "generic").
        paths: files or folders (searched for .txt, .md, .pdf).
        min_paragraph_chars: shorter blocks (headings, page numbers) are not passages.
        document_filter: optional hook that may rewrite a document (e.g. drop reference sections)
            or return None to skip it.
    """
    files = expand_paths(paths)
    if not files:
        raise ImportDataError(Path(paths[0]) if paths else Path("."), "no .txt, .md or .pdf file found")
    records: list[DocumentRecord] = []
    skipped = 0
    for i, path in enumerate(files, start=1):
        record = read_document(path, min_paragraph_chars)
        if document_filter is not None:
            filtered = document_filter(record)
            if filtered is None:
                skipped += 1
                continue
            record = filtered
        records.append(record)
        progress("files", i, len(files))
    summary = ImportSummary(corpus=corpus_name)
    with transaction.atomic():
        # Documents may extend a corpus of any kind (more textbook chapters): its kind is kept.
        corpus, _ = Corpus.objects.get_or_create(name=corpus_name, defaults={"kind": Corpus.Kind.GENERIC})
        existing = {d.name: d for d in corpus.documents.all()}
        known = set(corpus.passages.values_list("text_sha256", flat=True))
        for record in records:
            document = _upsert_document(
                corpus,
                existing,
                record.name,
                record.text,
                record.page_starts,
                {"file": record.path.name},
                "",
                record.path if record.path.suffix.lower() == ".pdf" else None,
                summary.documents,
            )
            new = []
            for position, paragraph in enumerate(record.paragraphs):
                sha = sha256_text(paragraph.text)
                if sha in known:
                    summary.passages.unchanged += 1
                    continue
                known.add(sha)
                new.append(
                    Passage(
                        corpus=corpus,
                        document=document,
                        position=position,
                        text=paragraph.text,
                        text_sha256=sha,
                        start=paragraph.start,
                    )
                )
            Passage.objects.bulk_create(new, batch_size=2000)
            summary.passages.created += len(new)
    summary.totals = {"files": len(files), "documents_skipped": skipped}
    return summary
