"""The review stream: one submission at a time, decided with the keyboard, next after each decision, and
decided work still findable (phone and laptop, axe-core audited, nothing wider than the screen)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment
from annotation.services.batches import BatchSpec, create_batch
from tests.browser.conftest import SCREENS, overflow, serious_violations
from tests.factories import make_corpus, make_document, make_researcher, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-for-tests-stream"
REASON = "The answers do not come from the syllabus; please read the instructions again before the next HIT."


def _three_submissions() -> list[Assignment]:
    corpus = make_corpus(name="syl")
    for d in range(3):
        make_document(corpus, name=f"course-{d}", text=f"Office hours are on day {d}.", page_starts=[0])
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", reward_cents=0))
    batch.publish()
    out = []
    for w in range(3):
        assignment = claim_next(batch, make_worker(f"stream-worker-{w}"))
        assignment.submit({"qa-0-question": f"Question {w}?"})
        out.append(assignment)
    return out


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_review_stream__keyboard_decisions_next_and_decided_items_findable(
    live_server: Any, page: Page, screen: str
) -> None:
    submissions = _three_submissions()
    make_researcher("rosa", password=PASSWORD)
    page.set_viewport_size(SCREENS[screen])
    page.goto(f"{live_server.url}/accounts/login/?next=/review/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.click("#review-stream")
    nav = page.locator("#stream-nav")
    expect(nav).to_contain_text("Submission 1 of 3")
    assert serious_violations(page) == [] and overflow(page) == []
    first = page.get_by_role("heading", level=1).inner_text()

    page.keyboard.press("n")
    expect(nav).to_contain_text("Submission 2 of 3")
    page.keyboard.press("p")
    expect(nav).to_contain_text("Submission 1 of 3")
    expect(page.get_by_role("heading", level=1)).to_have_text(first)

    page.keyboard.press("a")  # approve: the next submission opens
    expect(page.locator(".message.success")).to_contain_text("Approved submission")
    expect(nav).to_contain_text("Submission 1 of 2")
    approved = Assignment.objects.filter(status=Assignment.Status.APPROVED).get()

    page.keyboard.press("r")
    expect(page.locator("#reason")).to_be_focused()
    page.keyboard.type(REASON)
    page.select_option("#reject-category", "FAILED_INSTRUCTIONS")
    page.locator("#reject-form").get_by_role("button", name="Reject").click()
    expect(page.locator(".message.success")).to_contain_text("Rejected submission")
    expect(nav).to_contain_text("Submission 1 of 1")
    rejected = Assignment.objects.get(status=Assignment.Status.REJECTED)
    assert rejected.feedback == REASON

    page.select_option("#stream-status", "approved")
    page.locator("#stream-nav").get_by_role("button", name="Filter").click()
    expect(nav).to_contain_text("Submission 1 of 1")
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"Assignment {approved.pk}")
    page.select_option("#stream-status", "all")
    page.locator("#stream-nav").get_by_role("button", name="Filter").click()
    expect(nav).to_contain_text("Submission 1 of 3")
    assert serious_violations(page) == [] and overflow(page) == []
    assert {s.pk for s in submissions} == set(Assignment.objects.values_list("pk", flat=True))


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_review_queue_and_compare__fit_the_screen(live_server: Any, page: Page, screen: str) -> None:
    from tests.console.test_review_queue_pages import submissions

    hit = submissions(documents=1, workers=3)[0].hit
    make_researcher("rosa", password=PASSWORD)
    page.set_viewport_size(SCREENS[screen])
    page.goto(f"{live_server.url}/accounts/login/?next=/review/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("details.queue-pairs").first).not_to_have_attribute("open", "")
    assert serious_violations(page) == [] and overflow(page) == []
    page.get_by_role("link", name="Compare the 3 workers of this HIT side by side").first.click()
    expect(page.locator("#compare thead th")).to_have_count(4)
    assert page.url.endswith(f"/review/compare/{hit.pk}/")
    assert serious_violations(page) == [] and overflow(page) == []
