"""The batch page follows its batch live: places by state, who is working now, per-HIT progress, cost and
QC, refreshed by polling ``/batches/<id>/progress.json`` without reloading the page (phone and laptop,
axe-core audited, nothing wider than the screen)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.services.batches import BatchSpec, create_batch
from tests.browser.conftest import SCREENS, overflow, serious_violations
from tests.factories import make_researcher, make_textbook, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-for-tests-live"
PASSAGES = [
    "Mitochondria release energy from food molecules through cellular respiration in most cells.",
    "Chloroplasts are the organelles in which photosynthesis takes place in the leaves of plants.",
    "Enzymes are proteins that speed up chemical reactions in living things without being used up.",
    "Electrons are negatively charged particles that orbit the nucleus of an atom in shells.",
    "Igneous rocks form when melted rock cools and hardens below or above the surface of Earth.",
    "The water cycle moves water between the oceans, the atmosphere and the land over and over.",
]


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_batch_page__updates_itself_as_workers_take_and_submit(
    live_server: Any, page: Page, screen: str
) -> None:
    make_textbook("demo-textbook", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="demo-textbook", limit=2, reward_cents=0))
    batch.publish()
    make_researcher("rosa", password=PASSWORD)
    page.set_viewport_size(SCREENS[screen])
    page.goto(f"{live_server.url}/accounts/login/?next=/batches/{batch.pk}/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    card = page.locator("#live-progress")
    expect(card).to_contain_text("Nobody is working on this batch right now")
    expect(card.locator(".place-free .v")).to_have_text("2")
    expect(card).to_contain_text("no reward on this batch")
    assert "0.00 USD" not in card.inner_text()
    assert serious_violations(page) == [] and overflow(page) == []

    worker = make_worker("live-worker")
    assignment = claim_next(batch, worker)  # no reload from here on: the page polls
    expect(card.locator("#working-now")).to_contain_text(worker.pseudonym, timeout=15000)
    expect(card.locator(".place-active .v")).to_have_text("1")
    expect(card.locator(".place-free .v")).to_have_text("1")

    passage = assignment.hit.passages.order_by("pk").first()
    assignment.submit({"passage": str(passage.pk), "question": "q", "answer": "a"})
    expect(card.locator(".place-awaiting_review .v")).to_have_text("1", timeout=15000)
    expect(card).to_contain_text("Nobody is working on this batch right now")
    expect(card.locator("#hit-progress")).to_contain_text("1 / 1")
    assert serious_violations(page) == [] and overflow(page) == []
