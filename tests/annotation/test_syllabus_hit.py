"""The Syllabus HIT through Django's test client on a real SyllabusQA syllabus (text + PDF) and real QA pairs.

Covers the check (every typed value kept, a message per field, the draft saved), the store (14 pairs with
spans at exact offsets and pages, in one submission, never twice) and the autosave endpoint.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from annotation import question_types as qt
from annotation.hits.syllabus_qa import CARD_TYPES, SyllabusQAHandler
from annotation.models import HIT, Assignment, Batch, Document, QAPair
from annotation.qc.syllabusqa import SyllabusQAPair, check_pair, find_duplicate_questions
from annotation.services.batches import BatchSpec, create_batch
from annotation.services.importing import import_syllabusqa
from crowd.followup_tasks import after_submission
from crowd.models import Consent, Worker
from worker import hit_links
from worker.assigning import claim_next

#: A short real syllabus (3 PDF pages) with 140 released QA pairs covering all seven types.
SYLLABUS = "Syllabus_Marine_Microbiome_2022_redacted"
CORPUS = "syllabusqa"


def import_one_syllabus(root: Path, work: Path, name: str = SYLLABUS) -> Document:
    """Import one real syllabus (text, PDF, page offsets) and its released QA pairs, not the whole release.

    A release-shaped folder is built in ``work`` from symbolic links to the real files plus split CSVs
    restricted to the syllabus's rows, and the real importer reads it.
    """
    split_src = root / "data" / "dataset_split"
    split_dst = work / "data" / "dataset_split"
    split_dst.mkdir(parents=True)
    for split in ("train", "val", "test"):
        with (split_src / f"{split}.csv").open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            rows = [row for row in reader if row["syllabus_name"] == name]
            fieldnames = reader.fieldnames or []
        with (split_dst / f"{split}.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=fieldnames)
            writer.writeheader()
            writer.writerows(rows)
    syllabi = work / "syllabi" / "syllabi_redacted"
    for folder, ext in (("text", "txt"), ("pdf", "pdf")):
        (syllabi / folder).mkdir(parents=True)
        (syllabi / folder / f"{name}.{ext}").symlink_to(
            root / "syllabi" / "syllabi_redacted" / folder / f"{name}.{ext}"
        )
    meta = root / "syllabi" / "syllabi_meta_info.utf8.csv"
    if meta.is_file():
        (work / "syllabi" / meta.name).symlink_to(meta)
    import_syllabusqa(work, corpus_name=CORPUS)
    return Document.objects.get(corpus__name=CORPUS, name=name)


def real_cards(root: Path, document: Document) -> list[dict[str, Any]]:
    """Two released QA pairs per type, in card order, whose spans are exact document text and that pass QC.

    Returns:
        One dict per card: type, question, answer, spans [(text, start, end, page)], steps.
    """
    chosen: dict[str, list[dict[str, Any]]] = {t: [] for t in qt.SYLLABUS_TYPES}
    for split in ("train", "val", "test"):
        with (root / "data" / "dataset_split" / f"{split}.csv").open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                qtype = row["question_type"]
                if row["syllabus_name"] != document.name or len(chosen[qtype]) >= qt.PAIRS_PER_TYPE:
                    continue
                spans = [
                    row[f"answer_span_{k}"].strip() for k in range(1, 6) if row[f"answer_span_{k}"].strip()
                ]
                steps = [
                    row[f"reasoning_step_{k}"] for k in range(1, 6) if row[f"reasoning_step_{k}"].strip()
                ]
                if any(document.text.find(s) < 0 for s in spans):
                    continue
                pair = SyllabusQAPair(
                    row["id"],
                    document.name,
                    qtype,
                    row["question"],
                    row["answer"],
                    tuple(spans),
                    tuple(steps),
                )
                if check_pair(pair, document.text).errors:
                    continue
                taken = [
                    SyllabusQAPair(c["id"], document.name, c["type"], c["question"], "")
                    for c in chosen[qtype]
                ]
                if find_duplicate_questions([*taken, pair]):
                    continue
                located = []
                for s in spans:
                    start = document.text.find(s)
                    located.append((s, start, start + len(s), document.page_of(start)))
                chosen[qtype].append(
                    {
                        "id": row["id"],
                        "type": qtype,
                        "question": row["question"],
                        "answer": row["answer"],
                        "spans": located,
                        "steps": steps,
                    }
                )
    cards = [card for t in qt.SYLLABUS_TYPES for card in chosen[t]]
    assert len(cards) == qt.PAIRS_PER_SYLLABUS_HIT, {t: len(c) for t, c in chosen.items()}
    return cards


def form_fields(cards: list[dict[str, Any]]) -> dict[str, str]:
    """The POST body of a complete submission, following the HIT form contract."""
    data: dict[str, str] = {}
    for i, card in enumerate(cards):
        data[f"qa-{i}-question_type"] = card["type"]
        data[f"qa-{i}-question"] = card["question"]
        data[f"qa-{i}-answer"] = qt.NO_ANSWER_TEXT if card["type"] == qt.NO_ANSWER else card["answer"]
        for j, (text, start, end, page) in enumerate(card["spans"]):
            data[f"qa-{i}-span-{j}"] = text
            data[f"qa-{i}-span-{j}-start"] = str(start)
            data[f"qa-{i}-span-{j}-end"] = str(end)
            data[f"qa-{i}-span-{j}-page"] = str(page)
        for j, step in enumerate(card["steps"]):
            data[f"qa-{i}-step-{j}"] = step
    return data


def claimed_hit(root: Path, tmp_path: Path, settings: Any, kind: str) -> dict[str, Any]:
    """A published local batch of ``kind`` on one real syllabus, its HIT claimed by a consenting worker."""
    settings.MEDIA_ROOT = tmp_path / "media"
    document = import_one_syllabus(root, tmp_path / "release")
    batch = create_batch(BatchSpec(kind=kind, corpus=CORPUS, provider="local", limit=1))
    batch.publish()
    worker = Worker.objects.get_or_create_for("local", "w1")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    return {
        "root": root,
        "document": document,
        "batch": batch,
        "assignment": assignment,
        "url": hit_links.url_for(assignment),
        "cards": real_cards(root, document),
    }


@pytest.fixture
def syllabus_hit(shared_data: Callable[[str], Path], tmp_path: Path, settings: Any) -> dict[str, Any]:
    """A published local syllabus batch on one real syllabus, claimed by a consenting worker."""
    return claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)


def test_accepts_field__contract_and_offset_extension() -> None:
    handler = SyllabusQAHandler()
    for name in (
        "qa-0-question_type",
        "qa-13-answer",
        "qa-4-span-4",
        "qa-4-span-0-start",
        "qa-9-step-4",
        "qa-2-span-3-page",
    ):
        assert handler.accepts_field(name), name
    for name in (
        "qa-14-question",
        "qa-0-span-5",
        "qa-0-step-5",
        "csrfmiddlewaretoken",
        "qa-0-spans",
        "qa--1-answer",
    ):
        assert not handler.accepts_field(name), name
    assert CARD_TYPES[:4] == (qt.YES_NO, qt.YES_NO, qt.SINGLE_FACTUAL, qt.SINGLE_FACTUAL)
    assert CARD_TYPES[-1] == qt.NO_ANSWER and len(CARD_TYPES) == 14


@pytest.mark.django_db
def test_get__shows_every_page_text_at_its_offsets(client: Any, syllabus_hit: dict[str, Any]) -> None:
    response = client.get(syllabus_hit["url"])
    assert response.status_code == 200
    document = syllabus_hit["document"]
    body = response.content.decode()
    pages = response.context["pages"]
    assert len(pages) == document.num_pages > 1
    for page in pages:
        assert page["text"] == document.text[page["start"] : page["end"]]
        # The page text is the element's whole content, so browser offsets add up to Document.text offsets.
        assert f'data-start="{page["start"]}" data-end="{page["end"]}">{escape(page["text"])}</div>' in body
        assert page["image"].endswith(f"/pages/{page['number']}.png")
    assert response.context["has_pdf"]
    assert body.count('name="qa-') >= 14 * 3
    # a template comment written over two lines with {# #} is printed on the page (Django's rule)
    assert "{#" not in body and "#}" not in body and "{%" not in body


@pytest.mark.django_db
def test_post__invalid_keeps_every_field_with_messages_and_saves_draft(
    client: Any, syllabus_hit: dict[str, Any]
) -> None:
    data = form_fields(syllabus_hit["cards"])
    data["qa-0-question"] = ""  # required
    single = syllabus_hit["cards"][2]["spans"][0]
    data["qa-2-span-1"] = single[0]  # a second span on a single factual card: span count violation
    data["qa-6-step-0"] = ""  # single reasoning without its step
    data["qa-1-answer"] = "Maybe, it depends"  # yes/no answer must start with yes or no
    response = client.post(syllabus_hit["url"], data)
    assert response.status_code == 200
    errors = response.context["errors"]
    assert set(errors) == {"qa-0-question", "qa-2-span-0", "qa-6-step-0", "qa-1-answer"}
    assert errors["qa-0-question"] == ["Write a question."]
    assert "exactly 1 answer span" in errors["qa-2-span-0"][0]
    assert "exactly 1 reasoning step" in errors["qa-6-step-0"][0]
    body = response.content.decode()
    for name, value in data.items():
        if value and not name.endswith(("-start", "-end", "-page", "question_type")):
            assert escape(value) in body, name
    for messages in errors.values():
        for message in messages:
            assert escape(message) in body
    assignment = Assignment.objects.get(pk=syllabus_hit["assignment"].pk)
    assert assignment.status == Assignment.Status.ACCEPTED
    assert assignment.draft == data
    assert not QAPair.objects.filter(assignment=assignment).exists()


@pytest.mark.django_db
def test_post__valid_stores_14_pairs_with_exact_spans_once(client: Any, syllabus_hit: dict[str, Any]) -> None:
    document = syllabus_hit["document"]
    cards = syllabus_hit["cards"]
    data = form_fields(cards)
    # A span the worker pasted by hand (no offsets) is located in the document by the server.
    data["qa-4-span-0-start"] = data["qa-4-span-0-end"] = data["qa-4-span-0-page"] = ""
    # Offsets that do not hold the span's text are never trusted.
    data["qa-5-span-0-start"], data["qa-5-span-0-end"] = "0", "5"
    response = client.post(syllabus_hit["url"], data)
    assert response.status_code == 200, response.context and response.context.get("errors")
    assert "Your answers are saved" in response.content.decode()

    assignment = Assignment.objects.get(pk=syllabus_hit["assignment"].pk)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.time_on_task_seconds is not None and assignment.time_on_task_seconds >= 0
    pairs = list(
        QAPair.objects.filter(assignment=assignment).order_by("position").prefetch_related("spans", "steps")
    )
    assert [p.question_type for p in pairs] == list(CARD_TYPES)
    assert all(p.document_id == document.pk and p.corpus_id == document.corpus_id for p in pairs)
    for pair, card in zip(pairs, cards, strict=True):
        assert pair.question == card["question"].strip()
        spans = list(pair.spans.all())
        assert [(s.text, s.start, s.end, s.page) for s in spans] == card["spans"]
        for span in spans:
            assert document.text[span.start : span.end] == span.text
            low, high = document.page_bounds(span.page)
            assert low <= span.start < high
        assert [s.text for s in pair.steps.all()] == [s.strip() for s in card["steps"]]
        if pair.question_type == qt.NO_ANSWER:
            assert pair.answer == pair.normalized_answer == qt.NO_ANSWER_TEXT
        if pair.question_type == qt.YES_NO:
            assert pair.normalized_answer in ("Yes", "No")
    after_submission(assignment.pk)  # the follow-up job the submission queued
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED

    again = client.post(syllabus_hit["url"], data)
    assert again.status_code == 200
    assert QAPair.objects.filter(assignment=assignment).count() == 14


@pytest.mark.django_db
def test_draft__autosave_is_restored_on_get(client: Any, syllabus_hit: dict[str, Any]) -> None:
    card = syllabus_hit["cards"][4]
    text, start, end, page = card["spans"][0]
    data = {
        "qa-4-question_type": card["type"],
        "qa-4-question": card["question"],
        "qa-4-span-0": text,
        "qa-4-span-0-start": str(start),
        "qa-4-span-0-end": str(end),
        "qa-4-span-0-page": str(page),
        "not-a-field": "dropped",
    }
    response = client.post(hit_links.url_for(syllabus_hit["assignment"], "hits:draft"), data)
    assert response.status_code == 200 and response.json()["saved"] is True
    assignment = Assignment.objects.get(pk=syllabus_hit["assignment"].pk)
    assert "not-a-field" not in assignment.draft and assignment.draft["qa-4-span-0-start"] == str(start)

    page_html = client.get(syllabus_hit["url"]).content.decode()
    assert escape(card["question"]) in page_html
    assert f'name="qa-4-span-0-start" value="{start}"' in page_html
    assert f'name="qa-4-span-0-page" value="{page}"' in page_html


@pytest.mark.django_db
def test_draft__late_save_never_replaces_newer_text(client: Any, syllabus_hit: dict[str, Any]) -> None:
    """A beacon from before a reload lands after the reloaded page's save: the newer text stays."""
    url = hit_links.url_for(syllabus_hit["assignment"], "hits:draft")
    newer = {"qa-0-question": "Is the final exam cumulative?", "draft_revisions": '{"qa-0-question": 2000}'}
    older = {"qa-0-question": "Is the final", "draft_revisions": json.dumps({"qa-0-question": 1000})}
    assert client.post(url, newer).json()["saved"] and client.post(url, older).json()["saved"]
    assignment = Assignment.objects.get(pk=syllabus_hit["assignment"].pk)
    assert assignment.draft["qa-0-question"] == "Is the final exam cumulative?"
    assert assignment.draft_revisions == {"qa-0-question": 2000}
    page_html = client.get(syllabus_hit["url"]).content.decode()
    revisions = '<script id="draft-revisions" type="application/json">{"qa-0-question": 2000}</script>'
    assert revisions in page_html


@pytest.mark.django_db
def test_locate_span__typed_text_found_near_miss_offered(client: Any, syllabus_hit: dict[str, Any]) -> None:
    """The span field's look-up: exact text gets its offsets and page, a garbled one the nearest match."""
    document = syllabus_hit["document"]
    text, start, end, page = syllabus_hit["cards"][0]["spans"][0]
    url = hit_links.url_for(syllabus_hit["assignment"], "hits:locate-span")
    found = client.post(url, {"text": text}).json()
    assert found["status"] == "exact" and document.text[found["start"] : found["end"]] == text.strip()
    assert found["page"] == document.page_of(found["start"])
    long_span = document.text[start : start + 80] if end - start < 80 else text
    garbled = "".join(ch.upper() if k % 9 == 0 else ch for k, ch in enumerate(long_span))
    garbled = garbled[:20] + "zzzz" + garbled[26:40] + "qq" + garbled[43:]
    missing = client.post(url, {"text": garbled}).json()
    assert missing["status"] == "not_found" and missing["nearest"] is not None
    nearest = missing["nearest"]
    assert document.text[nearest["start"] : nearest["end"]] == nearest["text"]
    assert client.post(url, {"text": "xq" * 5000}).json() == {"status": "not_found", "nearest": None}


@pytest.mark.django_db
def test_locate_span__only_an_open_assignments_link(client: Any, syllabus_hit: dict[str, Any]) -> None:
    """Security: a forged link is 404, a closed assignment 409, and GET is refused."""
    assignment = syllabus_hit["assignment"]
    url = hit_links.url_for(assignment, "hits:locate-span")
    assert client.get(url).status_code == 405
    forged = url.replace(hit_links.token_for(assignment), hit_links.token_for(assignment)[:-3] + "abc")
    assert client.post(forged, {"text": "exam"}).status_code == 404
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.RETURNED)
    assert client.post(url, {"text": "exam"}).status_code == 409


@pytest.mark.django_db
def test_post__profanity_is_scored_by_the_after_submission_job_not_the_page(
    client: Any, syllabus_hit: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The submit's checks never load the profanity model (scikit-learn); the QC job flags the pair."""
    from annotation.qc import syllabusqa as qc_syllabusqa
    from crowd.followup_tasks import after_submission

    data = form_fields(syllabus_hit["cards"])
    data["qa-0-question"] = data["qa-0-question"].rstrip("?") + ", you fucking idiot?"
    page_check = SyllabusQAHandler.check

    def model_loaded(texts: Any) -> list[float]:
        raise AssertionError("the HIT page scored profanity")

    def check_without_model(self: SyllabusQAHandler, *args: Any) -> Any:
        with monkeypatch.context() as patched:
            patched.setattr(qc_syllabusqa, "profanity_scores", model_loaded)
            return page_check(self, *args)

    monkeypatch.setattr(SyllabusQAHandler, "check", check_without_model)
    response = client.post(syllabus_hit["url"], data)
    errors = response.context.get("errors") if response.context else None
    assert "Your answers are saved" in response.content.decode(), errors
    assignment = Assignment.objects.get(pk=syllabus_hit["assignment"].pk)
    first = QAPair.objects.get(assignment=assignment, position=0)
    assert "profanity" not in first.qc_flags

    after_submission(assignment.pk)
    first.refresh_from_db()
    assert "profanity" in first.qc_flags
    others = QAPair.objects.filter(assignment=assignment).exclude(position=0)
    assert not any("profanity" in pair.qc_flags for pair in others)
