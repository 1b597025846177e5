"""A researcher's whole job in headless Chromium, on real SciQ passages: sign in, launch a local batch from
the New batch page (estimate first), invite a worker with the copy box, the worker writes a question, the
researcher approves it from the review queue, a second worker validates it (stage 2) and the researcher
reviews and approves that validation too. Every researcher page is screenshotted.

``researcher_with_approved_batch`` leaves a signed-in researcher page with an approved stage-1 and
stage-2 batch, for later steps (releases, benchmarks) to continue from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Assignment, Batch, Validation
from tests.annotation.test_sciq_hits import load_passages
from tests.browser.conftest import LAPTOP, consent_and_close_instructions, full_page_shot
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-researcher-password"


def _invite(page: Page, artifacts: Path, name: str) -> str:
    """Create one invite link on the batch page shown and return it (read from its copy box)."""
    page.get_by_role("button", name="Create links").click()
    box = page.locator("input.invite-url")
    expect(box).to_have_count(1)
    width = box.evaluate("el => el.getBoundingClientRect().width")
    url = box.input_value()
    assert width > 600, f"the invite box is {width}px wide"
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the link is cut off"
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    full_page_shot(page, artifacts / f"researcher-{name}.png")
    return url


@pytest.fixture
def researcher_with_approved_batch(
    live_server: Any,
    page: Page,
    browser: Any,
    artifacts_dir: Path,
    shared_data: Callable[[str], Path],
    eager_celery: None,
) -> dict[str, Any]:
    """The journey up to two approved submissions; returns the signed-in researcher ``page`` and more."""
    records = load_passages(shared_data("sciq"), 6)
    make_researcher("rosa", password=PASSWORD)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    base = live_server.url

    # Signing in: a wrong password keeps the name and says so; the right one goes where she was going.
    page.goto(f"{base}/review/")
    expect(page).to_have_url(f"{base}/accounts/login/?next=/review/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", "wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".error-summary")).to_contain_text("correct username and password")
    expect(page.locator("#id_username")).to_have_value("rosa")
    full_page_shot(page, artifacts_dir / "researcher-sign-in.png")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{base}/review/")
    expect(page.locator("header.top")).to_contain_text("Signed in as rosa")

    # New batch: a bad reward is named on its field, then the estimate, then Publish.
    page.get_by_role("link", name="New batch").click()
    page.select_option("#id_kind", "sciq_question")
    page.select_option("#id_corpus", "sciq")
    page.fill("#id_limit", "2")
    page.fill("#id_reward", "-1")
    page.fill("#id_expected_minutes", "5")
    page.fill("#id_title", "Write one science question")
    page.get_by_role("button", name="Check cost and pay").click()
    expect(page.locator("#field-reward .field-error")).to_contain_text("Reward per assignment (USD)")
    expect(page.locator("#id_title")).to_have_value("Write one science question")
    full_page_shot(page, artifacts_dir / "researcher-new-batch-errors.png")
    page.fill("#id_reward", "0.50")
    page.get_by_role("button", name="Check cost and pay").click()
    estimate = page.locator("#estimate")
    expect(estimate).to_contain_text("1.00 USD")  # 2 HITs x 0.50 USD, no fees on the local crowd
    expect(estimate).to_contain_text("6.00 USD/h")  # 0.50 USD in 5 minutes
    full_page_shot(page, artifacts_dir / "researcher-new-batch-estimate.png")
    page.get_by_role("button", name="Publish now").click()
    expect(page.locator(".message.success")).to_contain_text("is published on Local crowd with 2 HITs")
    batch = Batch.objects.get(kind=Batch.Kind.SCIQ_QUESTION)
    assert batch.status == Batch.Status.PUBLISHED and batch.reward_cents == 50
    full_page_shot(page, artifacts_dir / "researcher-batch.png")

    # Invite a worker; the worker writes the real SciQ question of the passage she picks.
    invite_a = _invite(page, artifacts_dir, "invites")
    context = browser.new_context(viewport=LAPTOP)
    worker = context.new_page()
    worker.goto(invite_a)
    worker.get_by_role("button", name="Start").click()
    consent_and_close_instructions(worker)
    worker.locator("[data-passage-card]").nth(0).click()
    text = worker.locator("[data-passage-card]").nth(0).locator("[data-passage-text]").inner_text()
    record = records[next(t for t in records if t.strip() == text.strip())]
    worker.fill("#id_question", record.question)
    worker.fill("#id_answer", record.answer)
    worker.get_by_role("button", name="Submit").click()
    expect(worker.get_by_text("Your answers are saved.")).to_be_visible()

    # The researcher approves it from the review queue (the stage-2 HIT is created on approval).
    page.get_by_role("link", name="Review").click()
    item = page.locator(".queue-item", has_text=record.question)
    expect(item).to_contain_text(record.answer)
    full_page_shot(page, artifacts_dir / "researcher-review-queue.png")
    item.locator("input[name=assignment]").check()
    page.get_by_role("button", name="Approve ticked").click()
    expect(page.locator(".message.success")).to_contain_text("Approved 1 submission")
    expect(page.locator(".message.success")).to_contain_text("reward 0.50 USD")
    stage2 = Batch.objects.get(kind=Batch.Kind.SCIQ_DISTRACTOR)

    # A second worker validates the question on the stage-2 batch.
    page.goto(f"{base}/batches/{stage2.pk}/")
    invite_b = _invite(page, artifacts_dir, "invites-stage2")
    validator = context.new_page()
    validator.context.clear_cookies()
    validator.goto(invite_b)
    validator.get_by_role("button", name="Start").click()
    consent_and_close_instructions(validator)
    validator.check("input[name=flag][value=too_specific]")
    boxes = validator.locator("input[name=suggested]")
    boxes.nth(0).check()
    boxes.nth(1).check()
    validator.fill("#id_own-0", record.distractors[0])
    validator.get_by_role("button", name="Submit").click()
    expect(validator.get_by_text("Your answers are saved.")).to_be_visible()
    context.close()

    # The validation is in the review queue with its flag, chosen and written distractors.
    page.goto(f"{base}/review/?type=validation")
    validation = Validation.objects.get()
    item = page.locator(f"#submission-{validation.assignment_id}")
    expect(item).to_contain_text("too_specific")
    expect(item).to_contain_text(record.distractors[0])
    full_page_shot(page, artifacts_dir / "researcher-review-validation.png")
    page.get_by_role("link", name=f"Submission {validation.assignment_id}").click()
    full_page_shot(page, artifacts_dir / "researcher-assignment.png")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".message.success")).to_contain_text(
        f"Approved submission {validation.assignment_id}"
    )
    assert set(Assignment.objects.values_list("status", flat=True)) == {Assignment.Status.APPROVED}
    assert errors == []
    return {"page": page, "base": base, "batch": batch, "stage2": stage2, "record": record}


def test_researcher_journey__sign_in_launch_invite_review_approve(
    researcher_with_approved_batch: dict,
) -> None:
    page: Page = researcher_with_approved_batch["page"]
    page.goto(
        f"{researcher_with_approved_batch['base']}/batches/{researcher_with_approved_batch['batch'].pk}/"
    )
    expect(page.locator("main")).to_contain_text("assignments approved")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{researcher_with_approved_batch['base']}/accounts/login/")
    page.goto(f"{researcher_with_approved_batch['base']}/")
    expect(page).to_have_url(f"{researcher_with_approved_batch['base']}/accounts/login/?next=/")
