"""The model in the loop on the Syllabus HIT, in headless Chromium, on a real SyllabusQA syllabus.

A worker on a batch whose setting is ``ask`` writes a card: once its question and answer are written
the card shows the search baseline's answer and the judge's verdict (and, in ``ask`` mode, the
invitation that goes with it), as stored in the database; the card's "Ask the model" button works
from the keyboard; the page passes axe with the result shown. Then the model goes down (its requests
fail): the cards say "No model answer", autosave and submission work as before, and the 14 pairs are
stored; the after-submission job gives each of them its check. Screenshots: model-loop-{answered,down}.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, Route, expect

from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.models import Assignment, ModelCheck, QAPair
from crowd.invites import create_invites
from evaluation import loop_tasks
from evaluation.services.model_checks import record_submission
from tests.browser.conftest import consent_and_close_instructions, serious_violations, tab_to
from tests.browser.test_syllabus_hit import fill_card, open_card, syllabus_batch  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db(transaction=True)

INVITE_TEXT = {
    "matched": "The model already answers this question. Try a harder one",
    "fooled": "Well done: this question is hard for the model.",
}


@pytest.fixture
def loop_batch(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The real-syllabus batch with the model in the loop (``ask``); card checks run as a worker would.

    Only the card check runs inline (``apply``): the submission's follow-ups stay queued, as on a
    server whose workers are busy, and the test runs the model job itself.
    """
    base: dict[str, Any] = request.getfixturevalue("syllabus_batch")
    batch = base["batch"]
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "ask"}}
    batch.save()
    check = loop_tasks.model_check_card
    monkeypatch.setattr(check, "delay", lambda *args: check.apply(args=args))
    return base


def test_card_shows_the_models_answer_and_fails_open(
    page: Page, live_server: Any, loop_batch: dict[str, Any], screenshot: Any
) -> None:
    batch, cards = loop_batch["batch"], loop_batch["cards"]
    errors_js: list[str] = []
    page.on("pageerror", lambda exc: errors_js.append(str(exc)))
    page.goto(live_server.url + urlparse(create_invites(1, batch=batch)[0].url).path)
    page.get_by_role("button", name="Start").click()
    consent_and_close_instructions(page)

    # Card 3 (single factual): written, then the worker moves on: the model's answer appears.
    fill_card(page, 2, cards[2])
    page.locator("[name='qa-2-question']").focus()
    page.keyboard.press("Tab")  # leaving the fields is "saving" the card; typing alone asks nothing
    result = page.locator("#model-result-2")
    expect(result).to_contain_text(re.compile("The model"), timeout=15000)
    check = ModelCheck.objects.get(assignment__hit__batch=batch, position=2)
    assert check.question == cards[2]["question"].strip() and check.system == "search"
    expect(result).to_contain_text(INVITE_TEXT[check.verdict])
    if not check.abstained:
        expect(result.locator(".model-answer")).to_have_text(check.model_answer)
    expect(page.locator("#card-2 .model-check")).to_have_attribute("data-state", check.verdict)
    assert serious_violations(page) == []
    screenshot("model-loop-answered", full_page=False)

    # The no-answer card is judged the other way and asked again from the keyboard.
    open_card(page, 12)
    page.fill("[name='qa-12-question']", cards[12]["question"])
    tab_to(page, "#card-12 .ask-model")
    page.keyboard.press("Enter")
    expect(page.locator("#model-result-12")).to_contain_text(
        re.compile("also found no answer|answered from the syllabus"), timeout=15000
    )
    no_answer = ModelCheck.objects.get(assignment__hit__batch=batch, position=12)
    expected = "also found no answer" if no_answer.verdict == "matched" else "answered from the syllabus"
    expect(page.locator("#model-result-12")).to_contain_text(expected)
    expect(page.locator("#model-result-12")).not_to_contain_text("Try a harder one")

    # The model goes down: every request to it fails. The cards say so; nothing else changes.
    def down(route: Route) -> None:
        route.abort()

    page.route(re.compile(r".*/model-check/.*"), down)
    fill_card(page, 0, cards[0])
    page.locator("[name='qa-0-answer']").focus()
    page.keyboard.press("Tab")
    expect(page.locator("#model-result-0")).to_contain_text("No model answer", timeout=15000)
    expect(page.locator("#model-result-0")).to_contain_text("Your work is saved as usual")
    expect(page.locator("#autosave-status")).to_have_text(re.compile("Draft saved"), timeout=15000)
    screenshot("model-loop-down", full_page=False)
    for i, card in enumerate(cards):
        if i not in (0, 2):
            fill_card(page, i, card)
    # One click submits: the last card's check, asked as its field is left, moves nothing under the pointer.
    page.click("#hit-form button[type=submit]")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    assert not errors_js, errors_js

    assignment = Assignment.objects.get(hit__batch=batch)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert QAPair.objects.filter(assignment=assignment).count() == len(CARD_TYPES)
    # The job queued after the submission: card 3's check is kept (unchanged), the rest asked now.
    counts = record_submission(assignment.pk)
    assert counts["linked"] + counts["asked"] == len(CARD_TYPES) and counts["unanswered"] == 0
    assert counts["linked"] >= 1
    assert ModelCheck.objects.filter(qa_pair__assignment=assignment).count() == len(CARD_TYPES)
