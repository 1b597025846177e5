"""New batch shows only the options of the chosen kind, and the estimate comes back in view.

On a phone and a laptop, with the keyboard: choosing SciQ question writing hides the syllabus, screening,
validation and expert options; screening shows its quiz; an expert batch shows the release fields. After
"Check cost and pay" the estimate with its Publish button is on screen without scrolling, and it has the
focus. Axe-core finds nothing serious, and nothing scrolls sideways.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import SCREENS, overflow, serious_violations
from tests.factories import make_researcher, make_textbook

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-for-tests-new-batch"
PASSAGES = [f"Passage {i} says that cells need energy from food to live and grow." for i in range(6)]


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_new_batch__options_of_the_chosen_kind_and_estimate_in_view(
    live_server: Any, page: Page, screen: str
) -> None:
    make_textbook("demo-textbook", PASSAGES)
    make_researcher("rosa", password=PASSWORD)
    page.set_viewport_size(SCREENS[screen])
    page.goto(f"{live_server.url}/accounts/login/?next=/batches/new/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    page.focus("#id_kind")
    page.select_option("#id_kind", "sciq_question")
    for hidden in ("documents", "parent", "quiz", "max_pairs_per_worker", "release"):
        expect(page.locator(f"#field-{hidden}")).to_be_hidden()
    expect(page.locator("#expert-fields")).to_be_hidden()
    for shown in ("corpus", "reward", "limit", "title"):
        expect(page.locator(f"#field-{shown}")).to_be_visible()
    expect(page.locator("#kind-note")).to_contain_text("SciQ question writing")
    expect(page.locator("#field-gold_block_below")).to_be_visible()  # its stage 2 serves gold items
    assert serious_violations(page) == [] and overflow(page) == []

    page.select_option("#id_kind", "screening")
    expect(page.locator("#field-quiz")).to_be_visible()
    expect(page.locator("#gold-fields")).to_be_hidden()
    expect(page.locator("#field-documents")).to_be_visible()
    page.select_option("#id_kind", "expert_answer")
    expect(page.locator("#field-release")).to_be_visible()
    expect(page.locator("#field-corpus")).to_be_hidden()

    page.select_option("#id_kind", "sciq_question")
    page.select_option("#id_corpus", "demo-textbook")
    page.fill("#id_reward", "0.40")
    page.fill("#id_expected_minutes", "4")
    page.locator("#id_expected_minutes").press("Enter")  # the form's first button: Check cost and pay
    estimate = page.locator("#estimate")
    expect(estimate).to_contain_text("6.00 USD/h")
    expect(estimate).to_be_in_viewport()
    expect(estimate.get_by_role("button", name="Publish now")).to_be_in_viewport()
    assert page.evaluate("document.activeElement.id") == "estimate"
    expect(page.locator("#field-documents")).to_be_hidden()  # still the chosen kind's options only
    assert serious_violations(page) == [] and overflow(page) == []
