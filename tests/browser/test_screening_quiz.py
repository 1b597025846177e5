"""A screening worker answers the quiz above the 14 cards in headless Chromium; the autosave keeps it.

The batch is a screening batch on a real SyllabusQA syllabus, so its HIT shows three questions chosen
from the syllabus's imported reference pairs. The worker types two answers, the draft autosaves, and a
reload brings them back. Screenshot: screening-quiz.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch, quiz_questions_for
from crowd.invites import create_invites
from tests.annotation.test_syllabus_hit import CORPUS, import_one_syllabus

pytestmark = pytest.mark.django_db(transaction=True)


def test_quiz_answers_survive_autosave_and_reload(
    page: Page, live_server: Any, shared_data: Any, tmp_path: Path, settings: Any, screenshot: Any
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    import_one_syllabus(shared_data("syllabusqa"), tmp_path / "release")
    batch = create_batch(BatchSpec(kind=Batch.Kind.SCREENING, corpus=CORPUS, provider="local", limit=1))
    batch.publish()
    quiz = quiz_questions_for(batch.hits.get())
    assert len(quiz) == 3
    errors_js: list[str] = []
    page.on("pageerror", lambda exc: errors_js.append(str(exc)))
    page.goto(live_server.url + urlparse(create_invites(1, batch=batch)[0].url).path)
    page.get_by_role("button", name="Start").click()
    page.check("input[name=consent]")
    page.get_by_role("button", name="Start the task").click()
    page.get_by_role("button", name="Close instructions").click()

    section = page.locator("#quiz")
    expect(section).to_be_visible()
    expect(section).to_contain_text("Screening questions")
    for question in quiz:
        expect(section).to_contain_text(question.question)
    answers = {"quiz-0-answer": quiz[0].references[0], "quiz-2-answer": "The syllabus does not say."}
    for name, value in answers.items():
        page.fill(f"[name='{name}']", value)
    page.locator("[name='quiz-2-answer']").blur()
    expect(page.locator("#autosave-status")).to_have_text(re.compile("Draft saved"), timeout=15000)
    screenshot("screening-quiz", full_page=False)
    draft = Assignment.objects.get(hit__batch=batch).draft
    assert {name: draft[name] for name in answers} == answers

    page.reload()
    for name, value in answers.items():
        assert page.input_value(f"[name='{name}']") == value
    assert page.input_value("[name='quiz-1-answer']") == ""
    assert not errors_js, errors_js
