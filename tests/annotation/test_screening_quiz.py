"""The screening quiz on a real SyllabusQA syllabus: chosen at batch creation, answered on the HIT page,
graded after submission with the SemEval-2013 lexical baseline and shown to the researcher."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.http import QueryDict
from django.urls import reverse
from markupsafe import escape

from annotation import question_types as qt
from annotation.hits import handler_for
from annotation.models import Assignment, Batch, QAPair, ScreeningGrade
from annotation.screening.sra import CORRECT
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch, quiz_questions_for
from crowd.followup_tasks import after_submission
from tests.annotation.test_syllabus_hit import CORPUS, SYLLABUS, claimed_hit, form_fields, import_one_syllabus
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

UNRELATED = "I usually spend my weekends hiking in the mountains with my dog and my friends."


@pytest.fixture
def screening(shared_data: Callable[[str], Path], tmp_path: Path, settings: Any) -> dict[str, Any]:
    """A published local screening batch (default quiz) on a real syllabus, claimed by a consenting worker."""
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SCREENING)
    return {**hit, "quiz": quiz_questions_for(hit["assignment"].hit)}


def test_create_batch__screening_gets_quiz_from_reference_pairs(screening: dict[str, Any]) -> None:
    quiz = screening["quiz"]
    assert len(quiz) == 3
    assert len({q.question_type for q in quiz}) == 3
    references = {
        str(p.pk): p for p in QAPair.objects.filter(document=screening["document"], assignment__isnull=True)
    }
    for question in quiz:
        pair = references[question.pair_id]
        assert question.question_type != qt.NO_ANSWER
        assert question.question == pair.question.strip()
        assert question.references[0] == pair.answer.strip()
    again = create_batch(BatchSpec(kind=Batch.Kind.SCREENING, corpus=CORPUS, limit=1))
    assert quiz_questions_for(again.hits.get()) == quiz  # same seed, same pairs: same questions
    none = create_batch(BatchSpec(kind=Batch.Kind.SCREENING, corpus=CORPUS, limit=1, quiz=0))
    assert quiz_questions_for(none.hits.get()) == []
    with pytest.raises(BatchSpecError, match="screening and syllabus QA batches only"):
        create_batch(BatchSpec(kind=Batch.Kind.SCIQ_QUESTION, corpus=CORPUS, quiz=2))


def test_get__screening_page_shows_quiz_above_the_cards(client: Any, screening: dict[str, Any]) -> None:
    body = client.get(screening["url"]).content.decode()
    assert "Screening questions" in body
    for k, question in enumerate(screening["quiz"]):
        assert f'name="quiz-{k}-answer"' in body
        assert escape(question.question) in body
    assert body.index('name="quiz-0-answer"') < body.index('name="qa-0-question"')
    syllabus_hit = create_batch(BatchSpec(kind=Batch.Kind.SYLLABUS_QA, corpus=CORPUS, limit=1)).hits.get()
    handler = handler_for(Batch.Kind.SYLLABUS_QA)
    assert handler.context(syllabus_hit, None, "preview-token")["quiz"] == []
    # a syllabus QA HIT without known-answer questions keeps the HIT form contract
    # (docs/reference/hit-forms.md) exactly: a quiz field it did not ask is dropped by the check
    body = QueryDict(mutable=True)
    body.update({**form_fields(screening["cards"]), "quiz-0-answer": "dropped"})
    fields = handler.fields_from(body)
    assert "quiz-0-answer" in handler_for(Batch.Kind.SCREENING).fields_from(body)
    handler.check(syllabus_hit, screening["assignment"], fields)
    assert "quiz-0-answer" not in fields


def test_post__missing_quiz_answer_rerenders_with_message_and_keeps_fields(
    client: Any, screening: dict[str, Any]
) -> None:
    data = form_fields(screening["cards"])
    data["quiz-0-answer"] = screening["quiz"][0].references[0]
    data["quiz-1-answer"] = "  "
    data["quiz-2-answer"] = UNRELATED
    response = client.post(screening["url"], data)
    assert response.status_code == 200
    assert response.context["errors"] == {"quiz-1-answer": ["Answer screening question 2."]}
    body = response.content.decode()
    assert escape("Answer screening question 2.") in body
    for name, value in data.items():
        if value.strip() and not name.endswith(("-start", "-end", "-page", "question_type")):
            assert escape(value) in body, name
    assignment = Assignment.objects.get(pk=screening["assignment"].pk)
    assert assignment.status == Assignment.Status.ACCEPTED and assignment.draft == data


def test_submission__quiz_graded_once_and_shown_to_the_researcher(
    client: Any, screening: dict[str, Any]
) -> None:
    quiz = screening["quiz"]
    data = form_fields(screening["cards"])
    data["quiz-0-answer"] = quiz[0].references[0]
    data["quiz-1-answer"] = UNRELATED
    data["quiz-2-answer"] = quiz[2].references[-1]
    response = client.post(screening["url"], data)
    assert "Your answers are saved" in response.content.decode(), (
        response.context and response.context["errors"]
    )
    assignment = Assignment.objects.get(pk=screening["assignment"].pk)
    assert assignment.answers["quiz-1-answer"] == UNRELATED

    first = after_submission(assignment.pk)
    grade = ScreeningGrade.objects.get(assignment=assignment)
    assert grade.status == ScreeningGrade.Status.GRADED and grade.classifier.startswith("sra-2way-")
    labels = [item["label"] for item in grade.items]
    assert labels[0] == CORRECT and labels[1] == "incorrect"
    assert grade.n_correct == labels.count(CORRECT) and grade.n_questions == 3
    assert first["quiz"] == f"{grade.n_correct}/3"
    assert after_submission(assignment.pk) == first  # a retry updates the one row
    assert ScreeningGrade.objects.filter(assignment=assignment).count() == 1
    assert QAPair.objects.filter(assignment=assignment).count() == 14

    staff = make_researcher()
    client.force_login(staff)
    page = client.get(reverse("annotation:assignment", args=[assignment.pk])).content.decode()
    assert f"Screening quiz: {grade.n_correct}/3" in page
    for item in grade.items:
        assert html.escape(item["question"]) in page and html.escape(item["answer"]) in page
        assert html.escape(item["best_reference"]) in page
        assert f"{item['confidence']:.2f}" in page
    assert (
        '<span class="badge ok">correct</span>' in page and '<span class="badge bad">incorrect</span>' in page
    )
    queue = client.get(reverse("annotation:review-queue")).content.decode()
    assert f"quiz {grade.n_correct}/3" in queue


def test_grade__ungraded_with_reason_when_semeval_is_absent(
    client: Any, screening: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROWDQA_SEMEVAL_DIR", str(tmp_path / "no-semeval-here"))
    data = form_fields(screening["cards"])
    for k, question in enumerate(screening["quiz"]):
        data[f"quiz-{k}-answer"] = question.references[0]
    client.post(screening["url"], data)
    result = after_submission(screening["assignment"].pk)
    grade = ScreeningGrade.objects.get(assignment=screening["assignment"])
    assert result["quiz"] == "ungraded" and grade.status == ScreeningGrade.Status.UNGRADED
    assert "SemEval-2013 data not found" in grade.reason
    assert [item["answer"] for item in grade.items] == [q.references[0] for q in screening["quiz"]]


def test_launch_batch__quiz_option(shared_data: Callable[[str], Path], tmp_path: Path) -> None:
    document = import_one_syllabus(shared_data("syllabusqa"), tmp_path / "release")
    out = StringIO()
    args = ("launch_batch", "--kind", "screening", "--corpus", CORPUS, "--document", SYLLABUS)
    call_command(*args, "--quiz", "2", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    batch = Batch.objects.get(pk=result["batch"])
    assert result["quiz_documents"] == 1 and batch.options["quiz"]["n"] == 2
    assert len(quiz_questions_for(batch.hits.get(document=document))) == 2
    with pytest.raises(CommandError, match="--quiz must be between 0 and 10"):
        call_command(*args, "--quiz", "11", stdout=StringIO())
