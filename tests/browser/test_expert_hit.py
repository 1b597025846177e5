"""An expert completes an expert answer HIT in headless Chromium on a real release (SyllabusQA 2.3).

The expert arrives through an invite link, consents, finds the answer box disabled until a question type
is chosen, is stopped by the in-page check, then chooses a type, answers and submits; the database holds
one ExpertAnswer for the crowd's pair. Screenshots: expert-hit-{start,answer,done}.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

from annotation import question_types as qt
from annotation.models import Assignment, ExpertAnswer
from crowd.invites import create_invites
from evaluation.services.expert import create_expert_batch
from exports.services.releases import register_release
from tests.annotation.test_expert_hit import SPLIT, export_small_release

pytestmark = pytest.mark.django_db(transaction=True)


def test_expert_chooses_type_then_answers(
    page: Page, live_server: Any, shared_data: Any, tmp_path: Path, settings: Any, screenshot: Any
) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    release = register_release(export_small_release(shared_data("syllabusqa"), tmp_path))
    batch = create_expert_batch(release, 1, seed=0, split=SPLIT)
    pair = batch.hits.get().qa_pair
    errors_js: list[str] = []
    page.on("pageerror", lambda exc: errors_js.append(str(exc)))

    invite = create_invites(1, batch=batch, is_expert=True)[0]
    page.goto(live_server.url + urlparse(invite.url).path)
    page.get_by_role("button", name="Start").click()
    page.check("input[name=consent]")
    page.get_by_role("button", name="Start the task").click()
    expect(page.locator("#help-dialog")).to_be_visible()  # the annotators' instructions and tutorial
    page.get_by_role("button", name="Close instructions").click()

    expect(page.locator("#expert-question")).to_have_text(pair.question)
    expect(page.locator(".page-text").first).to_be_visible()
    expect(page.locator("#answer")).to_be_disabled()
    screenshot("expert-hit-start", full_page=False)
    page.click("#hit-form button[type=submit]")
    expect(page.locator("#question_type-msg")).to_have_text("Choose the question type first.")

    page.check("#type-no-answer")  # the fixed answer, read-only
    expect(page.locator("#client-summary")).to_be_hidden()
    expect(page.locator("#answer")).to_have_value(qt.NO_ANSWER_TEXT)
    page.check("#type-multi-factual")
    expect(page.locator("#answer")).to_be_enabled()
    expect(page.locator("#answer")).to_have_value("")
    expect(page.locator("#answer-hint")).to_contain_text("Give every fact")
    answer = "Lectures are on Tuesdays and Thursdays; the lab meets on Fridays."
    page.fill("#answer", answer)
    page.click("#tab-pdf")
    page.wait_for_function("document.querySelector(\".pdf-page[data-page='1']\").naturalWidth > 0")
    screenshot("expert-hit-answer", full_page=False)
    page.click("#hit-form button[type=submit]")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    screenshot("expert-hit-done", full_page=False)
    assert not errors_js, errors_js

    stored = ExpertAnswer.objects.get()
    assert (stored.qa_pair_id, stored.question_type, stored.answer) == (pair.pk, qt.MULTI_FACTUAL, answer)
    assert stored.assignment.status == Assignment.Status.SUBMITTED
