"""Importers against the real releases: counts, idempotence, round trip, all-or-nothing on errors."""

import csv
import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AnswerSpan, Corpus, Distractor, Document, Passage, QAPair

pytestmark = pytest.mark.django_db


def _run(*args: str) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_import_syllabusqa__counts_idempotence_and_round_trip(shared_data) -> None:
    root = shared_data("syllabusqa")
    first = _run("import_syllabusqa", str(root))
    assert first["syllabi"] == 63 and first["qa_pairs"]["created"] == 5078
    assert first["by_split"] == {"train": 3018, "val": 957, "test": 1103}
    assert all(720 <= n <= 727 for n in first["by_type"].values()) and len(first["by_type"]) == 7
    assert Document.objects.filter(corpus__name="syllabusqa").count() == 63
    assert Document.objects.exclude(pdf="").count() == 63
    # Every document has one page start per PDF page, increasing from 0.
    for document in Document.objects.all():
        assert document.page_starts[0] == 0 and document.page_starts == sorted(document.page_starts)
    n_spans = AnswerSpan.objects.count()

    second = _run("import_syllabusqa", str(root))
    assert second["qa_pairs"] == {"created": 0, "updated": 0, "unchanged": 5078}
    assert second["documents"] == {"created": 0, "updated": 0, "unchanged": 63}
    assert AnswerSpan.objects.count() == n_spans

    # Round trip: every released row reads back with the same fields.
    split_dir = root / "data" / "dataset_split"
    pairs = {
        qa.external_id: qa
        for qa in QAPair.objects.select_related("document").prefetch_related("spans", "steps")
    }
    checked = 0
    for split in ("train", "val", "test"):
        with (split_dir / f"{split}.csv").open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                qa = pairs[row["id"]]
                assert (qa.document.name, qa.question_type, qa.question, qa.answer, qa.original_split) == (
                    row["syllabus_name"],
                    row["question_type"],
                    row["question"],
                    row["answer"],
                    split,
                )
                assert [s.text for s in qa.spans.all()] == [
                    row[f"answer_span_{i}"] for i in range(1, 6) if row[f"answer_span_{i}"]
                ]
                assert [s.text for s in qa.steps.all()] == [
                    row[f"reasoning_step_{i}"] for i in range(1, 6) if row[f"reasoning_step_{i}"]
                ]
                checked += 1
    assert checked == 5078


def test_import_syllabusqa__located_spans_point_at_their_page(shared_data) -> None:
    _run("import_syllabusqa", str(shared_data("syllabusqa")))
    located = AnswerSpan.objects.exclude(start=None).select_related("qa_pair__document")
    assert located.count() > 4000
    for span in located[:500]:
        document = span.qa_pair.document
        assert " ".join(document.text[span.start : span.end].lower().split()) == " ".join(
            span.text.lower().split()
        )
        start, end = document.page_bounds(span.page)
        assert start <= span.start < end


def test_import_syllabusqa__malformed_release_changes_nothing(shared_data, tmp_path: Path) -> None:
    root = tmp_path / "syllabusqa"
    shutil.copytree(shared_data("syllabusqa") / "data", root / "data")
    (root / "syllabi" / "syllabi_redacted").mkdir(parents=True)
    shutil.copytree(
        shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "text",
        root / "syllabi" / "syllabi_redacted" / "text",
    )
    victim = root / "syllabi" / "syllabi_redacted" / "text" / "101-f22-syll.txt"
    victim.unlink()
    with pytest.raises(
        CommandError, match=r"101-f22-syll.txt: syllabus text file for '101-f22-syll' not found"
    ):
        _run("import_syllabusqa", str(root))
    assert not Corpus.objects.exists() and not QAPair.objects.exists()


def test_import_sciq_and_arc__counts_and_idempotence(shared_data) -> None:
    sciq = _run("import_sciq", str(shared_data("sciq")))
    assert sciq["qa_pairs"]["created"] == 13679 and sciq["without_passage"] == 1427
    assert QAPair.objects.filter(corpus__name="sciq", passage=None).count() == 1427
    assert Distractor.objects.filter(qa_pair__corpus__name="sciq").count() == 3 * 13679
    arc = _run("import_arc", str(shared_data("arc")))
    assert arc["qa_pairs"]["created"] == 7787
    again = _run("import_sciq", str(shared_data("sciq")))
    assert again["qa_pairs"] == {"created": 0, "updated": 0, "unchanged": 13679}
    assert Passage.objects.filter(corpus__name="sciq").count() == sciq["passages"]["created"]


def test_import_corpus__text_and_pdf(tmp_path: Path) -> None:
    from console.demo import render_pdf

    (tmp_path / "notes.txt").write_text(
        "A long enough first paragraph about cells and energy.\n\n"
        "A second paragraph, also long enough to keep as a passage.\n"
    )
    (tmp_path / "chapter.pdf").write_bytes(
        render_pdf(
            [
                "Photosynthesis happens in chloroplasts of leaves.",
                "Respiration releases energy stored in glucose.",
            ]
        )
    )
    summary = _run("import_corpus", "biology", str(tmp_path))
    assert summary["documents"]["created"] == 2
    assert Passage.objects.filter(corpus__name="biology").count() == 4
    pdf_doc = Document.objects.get(name="chapter")
    assert len(pdf_doc.page_starts) == 2 and "Respiration" in pdf_doc.page_text(2)
    assert _run("import_corpus", "biology", str(tmp_path))["passages"]["created"] == 0


def test_import_corpus__missing_path() -> None:
    with pytest.raises(CommandError, match=r"nowhere.txt: no such file or folder"):
        _run("import_corpus", "x", "/nonexistent/nowhere.txt")


def test_load_demo__home_page_lists_demo_corpora(client, settings) -> None:
    settings.CROWDQA_PUBLIC_DASHBOARD = True
    _run("load_demo")
    page = client.get("/").content.decode()
    assert "demo-syllabi" in page and "demo-textbook" in page
    document = Document.objects.get(corpus__name="demo-syllabi", name__startswith="BIO 105")
    assert document.num_pages == 3
    response = client.get(f"/documents/{document.pk}/?page=2")
    assert "Grading" in response.content.decode()
    assert client.get(f"/documents/{document.pk}/pdf/").status_code == 200


def test_researcher_pages__need_a_researcher(client, settings) -> None:
    settings.CROWDQA_PUBLIC_DASHBOARD = False
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/"
