"""QC flags keep their severity: a real submission with 2-word answers is approved by
``review_batch --approve-all-passing``, and every submission it leaves out is listed with why.

The syllabus, its PDF and the QA pairs are SyllabusQA's published data (``shared_data``); the two short
answers ("30 percent", "Jones 615") are the authors' own answers for that syllabus.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotation import question_types as qt
from annotation.models import Assignment, QAPair
from annotation.qc.common import ERROR, REVIEW
from crowd.followup_tasks import after_submission
from crowd.models import Consent, Worker
from tests.annotation.test_syllabus_hit import claimed_hit, form_fields
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

SHORT_ANSWERS = [
    (
        "What percent of the final grade is based on oral presentations?",
        "30 percent",
        "30% Oral presentations",
    ),
    ("In which classroom does the class meet?", "Jones 615", "Classroom: Jones 615"),
]
"""Released single-factual pairs of the syllabus (val.csv) whose answers have two words."""


def _run(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _submit_short_answers(client: Any, hit: dict[str, Any]) -> Assignment:
    cards = [dict(card) for card in hit["cards"]]
    factual = [i for i, card in enumerate(cards) if card["type"] == qt.SINGLE_FACTUAL]
    for i, (question, answer, span) in zip(factual, SHORT_ANSWERS, strict=True):
        cards[i].update(question=question, answer=answer, spans=[(span, "", "", "")], steps=[])
    response = client.post(hit["url"], form_fields(cards))
    assert response.status_code == 200 and "Your answers are saved" in response.content.decode()
    assignment = Assignment.objects.get(pk=hit["assignment"].pk)
    after_submission(assignment.pk)
    return assignment


def test_approve_all_passing__review_only_flags_are_approved_errors_are_listed(
    client: Any, shared_data: Callable[[str], Path], tmp_path: Path, settings: Any
) -> None:
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, "syllabus_qa")
    batch = hit["batch"]
    batch.assignments_per_hit = 2
    batch.save(update_fields=["assignments_per_hit"])
    hit["assignment"].hit.max_assignments = 2
    hit["assignment"].hit.save(update_fields=["max_assignments"])
    short = _submit_short_answers(client, hit)
    short_pairs = [p for p in short.qa_pairs.all() if p.answer in {a for _, a, _ in SHORT_ANSWERS}]
    assert len(short_pairs) == 2
    for pair in short_pairs:
        # the authors' answer-length rule: a review flag, stored as one
        assert "too_short" in pair.qc_flags and pair.qc_severity["too_short"] == REVIEW

    # A second worker's submission holds a pair whose question is too short and that has no span: errors.
    other = Worker.objects.get_or_create_for("local", "w2")
    Consent.objects.create(worker=other, batch=batch)
    failing = claim_next(batch, other)
    assert failing is not None
    failing.submit({"note": "stored by hand"})
    QAPair.objects.create(
        corpus=batch.corpus,
        document=hit["document"],
        assignment=failing,
        question_type=qt.SINGLE_FACTUAL,
        question="Midterm?",
        answer="March 3",
    )
    after_submission(failing.pk)
    assert QAPair.objects.get(assignment=failing).qc_severity["too_short"] == ERROR

    result = _run("review_batch", "--batch", str(batch.pk), "--approve-all-passing", "--list")
    assert result["approved"] == [short.pk]
    assert result["skipped"] == [
        {"assignment": failing.pk, "reason": "qc_errors", "detail": "span_count, too_short"}
    ]
    rows = {r["assignment"]: r for r in result["submissions"]}
    assert rows[short.pk]["error_flags"] == [] and "too_short" in rows[short.pk]["flags"]
    assert (
        rows[failing.pk]["error_flags"] == ["span_count", "too_short"]
        and rows[failing.pk]["status"] == "submitted"
    )
    # Every submitted assignment is either approved or listed as skipped: none left out silently.
    submitted = {short.pk, failing.pk}
    assert submitted == set(result["approved"]) | {s["assignment"] for s in result["skipped"]}
