"""Known-answer questions inside a syllabus QA batch, end to end on a real SyllabusQA syllabus.

The researcher asks for known-answer questions (``launch_batch --quiz N`` or ``attach_gold --questions
N``): every HIT of the batch shows N questions about its syllabus drawn from the syllabus's reference
pairs, as the screening quiz draws them. Simulated workers read the questions off the real HIT page and
answer them: a careful worker looks the question up in SyllabusQA's release (the answer key) and copies
the syllabus text that answers it, a careless one answers with another question's answer on the same
syllabus, a spammer writes the same unrelated sentence everywhere. The after-submission job grades the
answers with the screening quiz's grader and counts them in the worker's gold standing, whose
thresholds block.
"""

from __future__ import annotations

import csv
import html as htmllib
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Batch, GoldStanding, ScreeningGrade
from annotation.services.batches import BatchSpec, create_batch, quiz_questions_for
from crowd.followup_tasks import after_submission
from crowd.models import Consent, Worker
from tests.annotation.test_syllabus_hit import CORPUS, form_fields, import_one_syllabus, real_cards
from tests.factories import make_researcher
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

QUESTIONS = 6
SPAM = "I usually spend my weekends hiking in the mountains with my dog and my friends."
_LABEL = re.compile(r'<label for="quiz-(\d+)-answer">\d+\. (.*?)</label>', re.S)


@pytest.fixture
def syllabus(shared_data: Callable[[str], Path], tmp_path: Path, settings: Any) -> dict[str, Any]:
    """One real syllabus with its released pairs imported, and the release's answer key for it."""
    settings.MEDIA_ROOT = tmp_path / "media"
    root = shared_data("syllabusqa")
    document = import_one_syllabus(root, tmp_path / "release")
    key: dict[str, dict[str, str]] = {}
    for split in ("train", "val", "test"):
        with (root / "data" / "dataset_split" / f"{split}.csv").open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["syllabus_name"] == document.name:
                    key[" ".join(row["question"].split())] = row
    return {"root": root, "document": document, "key": key, "cards": real_cards(root, document)}


def _batch(**options: Any) -> Batch:
    batch = create_batch(
        BatchSpec(
            kind=Batch.Kind.SYLLABUS_QA,
            corpus=CORPUS,
            provider="local",
            limit=1,
            assignments=3,
            quiz=QUESTIONS,
            options=options,
        )
    )
    batch.publish()
    return batch


def _answer(style: str, question: str, key: dict[str, dict[str, str]]) -> str:
    """What a simulated worker writes for a known-answer question it read on the page."""
    if style == "spammer":
        return SPAM
    row = key[" ".join(question.split())]
    if style == "careful":  # copies the syllabus text that answers it (its first span), else the answer
        return row["answer_span_1"].strip() or row["answer"]
    others = [r for q, r in key.items() if r["id"] != row["id"] and r["answer"].strip()]
    return others[len(question) % len(others)]["answer"]  # careless: another question's answer


def _work(client: Client, batch: Batch, worker: Worker, style: str, syllabus: dict[str, Any]) -> Assignment:
    """Claim, read the page, answer as ``style`` and submit through the real form; run the follow-up."""
    assignment = claim_next(batch, worker)
    Consent.objects.get_or_create(worker=worker, batch=batch)
    url = hit_links.url_for(assignment)
    page = htmllib.unescape(client.get(url).content.decode())
    shown = {int(k): q.strip() for k, q in _LABEL.findall(page)}
    assert len(shown) == QUESTIONS
    data = form_fields(syllabus["cards"])
    for k, question in shown.items():
        data[f"quiz-{k}-answer"] = _answer(style, question, syllabus["key"])
    response = client.post(url, data)
    assert "Your answers are saved" in response.content.decode(), (
        response.context and response.context["errors"]
    )
    after_submission(assignment.pk)
    return Assignment.objects.get(pk=assignment.pk)


def test_questions__on_every_hit_from_the_reference_set_and_required(
    client: Client, syllabus: dict[str, Any]
) -> None:
    batch = _batch()
    hit = batch.hits.get()
    questions = quiz_questions_for(hit)
    assert len(questions) == QUESTIONS
    for question in questions:  # each one is a released pair of this syllabus
        assert " ".join(question.question.split()) in syllabus["key"]
    worker = Worker.objects.get_or_create_for("local", "w1")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    url = hit_links.url_for(assignment)
    body = client.get(url).content.decode()
    assert "Questions about this syllabus" in body and "Screening" not in body
    assert "copy the words of the syllabus that answer it" in body  # what the grader recognises
    assert body.index('name="quiz-0-answer"') < body.index('name="qa-0-question"')
    response = client.post(url, form_fields(syllabus["cards"]))
    assert response.status_code == 200
    assert response.context["errors"]["quiz-0-answer"] == ["Answer question 1 about the syllabus."]
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ACCEPTED

    plain = create_batch(BatchSpec(kind=Batch.Kind.SYLLABUS_QA, corpus=CORPUS, limit=1))
    assert quiz_questions_for(plain.hits.get()) == []  # none unless asked


def test_careful_kept_careless_and_spammer_blocked(
    client: Client, syllabus: dict[str, Any], eager_celery: None
) -> None:
    batch = _batch(gold_warn_below=60, gold_block_below=35, gold_min_answers=QUESTIONS)
    done = {
        style: _work(client, batch, Worker.objects.get_or_create_for("local", style), style, syllabus)
        for style in ("careful", "careless", "spammer")
    }
    records = {s: GoldStanding.objects.get(batch=batch, worker=a.worker) for s, a in done.items()}
    grades = {s: ScreeningGrade.objects.get(assignment=a) for s, a in done.items()}
    for style, record in records.items():  # each graded question is one gold answer
        assert record.gold_n == grades[style].n_graded and record.gold_correct == grades[style].n_correct
    assert records["careful"].state == GoldStanding.State.OK
    assert records["careful"].gold_accuracy >= 0.8
    for style in ("careless", "spammer"):
        worker = Worker.objects.get(pk=done[style].worker_id)
        assert records[style].state == GoldStanding.State.BLOCKED, records[style].reason
        assert worker.blocked and f"Batch({batch.pk}) quality checks: gold accuracy" in worker.block_reason
        assert records[style].gold_n >= QUESTIONS - 1  # a low-confidence grade may be left out
    assert records["spammer"].gold_correct == 0

    client.force_login(make_researcher())
    page = client.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert f"{QUESTIONS} known-answer questions on the syllabus per HIT" in page
    assert "flagged under 60% gold accuracy, blocked under 35%, after 6 graded answers" in page
    assert "quality check: blocked" in page
    review = client.get(reverse("annotation:assignment", args=[done["careless"].pk])).content.decode()
    assert f"Known-answer questions: {grades['careless'].score_label}" in review
    assert "Screening quiz" not in review


def test_attach_gold__questions_on_an_existing_batch(syllabus: dict[str, Any]) -> None:
    batch = create_batch(BatchSpec(kind=Batch.Kind.SYLLABUS_QA, corpus=CORPUS, limit=1))
    out = io.StringIO()
    call_command(
        "attach_gold", "--batch", str(batch.pk), "--questions", "4", "--block-below", "30", stdout=out
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary == {
        "batch": batch.pk,
        "questions": 4,
        "documents": 1,
        "documents_with_questions": 1,
        "documents_without": 0,
        "options": {"gold_block_below": 30.0},
    }
    assert len(quiz_questions_for(Batch.objects.get(pk=batch.pk).hits.get())) == 4
    for bad, message in (
        (["--gold-rate", "10"], "--gold-rate are for SciQ validation batches"),
        (["--questions", "11"], "between 0 and 10"),
        (["--attention-block", "2"], "no attention items"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command("attach_gold", "--batch", str(batch.pk), *bad)
    plain = create_batch(BatchSpec(kind=Batch.Kind.SYLLABUS_QA, corpus=CORPUS, limit=1))
    with pytest.raises(CommandError, match="give --questions N"):
        call_command("attach_gold", "--batch", str(plain.pk), "--block-below", "30")
    call_command("attach_gold", "--batch", str(batch.pk), "--questions", "0")
    assert quiz_questions_for(Batch.objects.get(pk=batch.pk).hits.get()) == []


def test_launch_batch__quiz_and_thresholds_on_a_syllabus_batch(syllabus: dict[str, Any]) -> None:
    out = io.StringIO()
    call_command(
        "launch_batch",
        "--kind",
        "syllabus_qa",
        "--corpus",
        CORPUS,
        "--provider",
        "local",
        "--limit",
        "1",
        "--quiz",
        "2",
        "--gold-block-below",
        "25",
        stdout=out,
    )
    batch = Batch.objects.get(pk=json.loads(out.getvalue().strip().splitlines()[-1])["batch"])
    assert batch.options["gold_block_below"] == 25 and len(quiz_questions_for(batch.hits.get())) == 2
    with pytest.raises(CommandError, match="--gold-rate: a syllabus_qa batch's gold is known-answer"):
        call_command(
            "launch_batch",
            "--kind",
            "syllabus_qa",
            "--corpus",
            CORPUS,
            "--provider",
            "local",
            "--gold-rate",
            "5",
        )
