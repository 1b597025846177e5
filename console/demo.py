"""The demo data the quick start loads: syllabi (text + a generated PDF) with reference QA pairs, and
textbook paragraphs.

The files live in ``demo/`` in the repository and are written for crowdqa, so the demo works without
the real datasets: one hand-written syllabus (``demo/syllabi/``), ten more generated from the course
facts of ``demo/courses/courses.json`` with fourteen reference QA pairs each
(:mod:`annotation.demo_syllabi`), enough for a release with train, val and test and a benchmark on
``test``, and the textbook paragraphs of ``demo/textbook/``. Page breaks in the syllabus text are form
feeds; the PDF is generated from the same pages with reportlab, so its page boundaries match the stored
offsets exactly.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from annotation.demo_syllabi import DemoSyllabus, load_courses
from annotation.models import AnswerSpan, Corpus, Document, QAPair, ReasoningStep
from annotation.services.importing import Counts, _upsert_document, import_documents

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
SYLLABUS_CORPUS = "demo-syllabi"
TEXTBOOK_CORPUS = "demo-textbook"


def render_pdf(pages: list[str]) -> bytes:
    """Render plain-text pages into a simple, deterministic PDF (one PDF page per text page)."""
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=letter, invariant=1)
    width, height = letter
    for page in pages:
        text = pdf.beginText(54, height - 60)
        text.setFont("Helvetica", 10)
        for line in page.splitlines():
            text.textLine(line)
        pdf.drawText(text)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def load_demo() -> dict[str, Any]:
    """Create (or refresh) the demo corpora; idempotent."""
    counts = Counts()
    with transaction.atomic():
        corpus, _ = Corpus.objects.get_or_create(
            name=SYLLABUS_CORPUS,
            defaults={
                "kind": Corpus.Kind.SYLLABUS,
                "description": "Course syllabi written for crowdqa (fictional; reference QA pairs).",
                "source": "crowdqa demo data",
                "license": "CC0",
            },
        )
        existing = {d.name: d for d in corpus.documents.all()}
        sources = [
            (path.stem, path.read_text(encoding="utf-8").split("\f"), None)
            for path in sorted((DEMO_DIR / "syllabi").glob("*.txt"))
        ]
        sources += [(s.name, list(s.pages), s) for s in load_courses(DEMO_DIR / "courses" / "courses.json")]
        pairs = 0
        for name, pages, generated in sources:
            starts, offset = [], 0
            for page in pages:
                starts.append(offset)
                offset += len(page)
            with tempfile.TemporaryDirectory() as tmp:
                pdf_path = Path(tmp) / f"{name}.pdf"
                pdf_path.write_bytes(render_pdf(pages))
                document = _upsert_document(
                    corpus,
                    existing,
                    name,
                    "".join(pages),
                    starts,
                    {"course": pages[0].splitlines()[0]},
                    "",
                    pdf_path,
                    counts,
                )
            if generated is not None:
                pairs += _add_reference_pairs(corpus, document, generated)
    textbook = import_documents(TEXTBOOK_CORPUS, [DEMO_DIR / "textbook"], min_paragraph_chars=40)
    Corpus.objects.filter(name=TEXTBOOK_CORPUS).update(
        kind=Corpus.Kind.TEXTBOOK,
        description="Demo textbook paragraphs written for crowdqa.",
        source="crowdqa demo data",
        license="CC0",
    )
    return {"syllabi": {**counts.as_dict(), "reference_pairs_added": pairs}, "textbook": textbook.as_dict()}


def _add_reference_pairs(corpus: Corpus, document: Document, syllabus: DemoSyllabus) -> int:
    """Store the generated syllabus's reference pairs once (by id), spans located in the text."""
    known = set(corpus.qa_pairs.filter(document=document).values_list("external_id", flat=True))
    added = 0
    for pair in syllabus.pairs:
        if pair.id in known:
            continue
        qa = QAPair.objects.create(
            corpus=corpus,
            document=document,
            external_id=pair.id,
            question_type=pair.question_type,
            question=pair.question,
            answer=pair.answer,
        )
        spans = []
        for position, text in enumerate(pair.spans):
            start = document.text.index(text)
            spans.append(
                AnswerSpan(
                    qa_pair=qa,
                    position=position,
                    text=text,
                    start=start,
                    end=start + len(text),
                    page=document.page_of(start),
                )
            )
        AnswerSpan.objects.bulk_create(spans)
        ReasoningStep.objects.bulk_create(
            ReasoningStep(qa_pair=qa, position=position, text=text)
            for position, text in enumerate(pair.steps)
        )
        added += 1
    return added


DEMO_BATCHES = (
    ("Demo: syllabus QA", "syllabus_qa", SYLLABUS_CORPUS, 3, 3),
    ("Demo: SciQ questions", "sciq_question", TEXTBOOK_CORPUS, 1, 4),
)
"""(name, kind, corpus, assignments per HIT, HITs): the SciQ batch leaves passages free for a second one."""


def load_demo_batches() -> dict[str, Any]:
    """Filter the demo passages and open the local batches of :data:`DEMO_BATCHES` (once; idempotent).

    Two batches: syllabus QA and SciQ question writing. A SciQ validation (stage 2) batch opens by
    itself when a stage-1 question is approved; screening and expert batches are the researcher's choice.

    The demo then has work for a local worker straight away: ``invite_workers --batch ID`` prints a link.
    """
    from annotation.models import Batch
    from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
    from filters.services import filter_corpus

    filtered = filter_corpus(Corpus.objects.get(name=TEXTBOOK_CORPUS))
    batches: dict[str, Any] = {}
    for name, kind, corpus, assignments, limit in DEMO_BATCHES:
        batch = Batch.objects.filter(name=name).first()
        if batch is None:
            try:
                batch = create_batch(
                    BatchSpec(
                        kind=kind,
                        corpus=corpus,
                        name=name,
                        assignments=assignments,
                        reward_cents=0,
                        limit=limit,
                    )
                )
            except BatchSpecError as exc:  # e.g. every demo passage already used in an earlier run
                batches[kind] = {"error": str(exc)}
                continue
            batch.publish()
        batches[kind] = {"id": batch.pk, "hits": batch.hits.count()}
    return {"accepted_passages": filtered.get("accepted"), "batches": batches}
