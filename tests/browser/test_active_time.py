"""Active time on a real SciQ stage-1 HIT in headless Chromium: it stops counting while the page is hidden.

A scripted worker opens the HIT, works (typing, clicking) for a few seconds, leaves the page hidden for
several seconds, comes back, finishes and submits. Its true active time is the time the page was visible
(the worker never pauses longer than the idle limit), taken from the page's own clock at each step; the
active time stored on the assignment must be within 10% of it, and well below the wall time.

Headless Chromium keeps every page visible, so hiding is done the way a browser reports it to the page:
``document.visibilityState`` turns ``hidden`` and a ``visibilitychange`` event fires.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment
from annotation.services.batches import BatchSpec, create_batch
from crowd.invites import create_invites
from tests.annotation.test_sciq_hits import CORPUS, load_passages
from tests.browser.conftest import consent_and_close_instructions

pytestmark = pytest.mark.django_db(transaction=True)

SET_VISIBILITY = """state => {
  for (const [name, value] of [["visibilityState", state], ["hidden", state === "hidden"]]) {
    Object.defineProperty(document, name, { configurable: true, get: () => value });
  }
  document.dispatchEvent(new Event("visibilitychange"));
  return Date.now();
}"""


def _work(page: Page, seconds: float) -> None:
    """Type and move the pointer for ``seconds`` (a worker at work, never idle)."""
    end = time.monotonic() + seconds
    field = page.locator("#id_question")
    while time.monotonic() < end:
        field.press("End")
        page.keyboard.type("x", delay=40)
        page.keyboard.press("Backspace")
        page.mouse.move(200 + int(time.monotonic() * 10) % 100, 300)
        page.wait_for_timeout(150)


def test_active_time__stops_counting_while_the_page_is_hidden(
    live_server: Any, page: Page, shared_data: Callable[[str], Path]
) -> None:
    records = load_passages(shared_data("sciq"), 6)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=2))
    batch.publish()
    invite = create_invites(1, batch=batch, base_url=live_server.url)[0]
    page.goto(invite.url)
    page.get_by_role("button", name="Start").click()
    consent_and_close_instructions(page)
    loaded = page.evaluate("() => performance.timeOrigin")

    page.locator("[data-passage-card]").nth(0).click()
    page.locator("#id_question").click()
    _work(page, 3.0)
    hidden_at = page.evaluate(SET_VISIBILITY, "hidden")
    assignment = Assignment.objects.get(hit__batch=batch)
    # The page reports its total when hidden (a beacon); autosaves before it carried smaller totals.
    visible_so_far = (hidden_at - loaded) / 1000

    def stored() -> float:
        return Assignment.objects.get(pk=assignment.pk).active_seconds or 0.0

    deadline = time.monotonic() + 5
    while stored() < 0.9 * visible_so_far and time.monotonic() < deadline:
        time.sleep(0.1)
    at_hide = stored()
    assert at_hide == pytest.approx(visible_so_far, rel=0.10)
    time.sleep(5.0)
    shown_at = page.evaluate(SET_VISIBILITY, "visible")

    passage_text = page.locator("[data-passage-card]").nth(0).locator("[data-passage-text]").inner_text()
    record = records[next(t for t in records if t.strip() == passage_text.strip())]
    page.fill("#id_question", record.question)
    page.fill("#id_answer", record.answer)
    _work(page, 2.0)
    page.fill("#id_question", record.question)
    submitted_at = page.evaluate("() => Date.now()")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Your answers are saved.")).to_be_visible()

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    true_active = ((hidden_at - loaded) + (submitted_at - shown_at)) / 1000
    hidden = (shown_at - hidden_at) / 1000
    assert hidden >= 5
    assert assignment.active_seconds == pytest.approx(true_active, rel=0.10)
    assert assignment.time_on_task_seconds >= assignment.active_seconds + 0.9 * hidden
