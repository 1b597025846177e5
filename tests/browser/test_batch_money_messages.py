"""Money and messages of a batch in headless Chromium: the batch page's review period (auto-approval),
bonuses from an uploaded CSV (a bad row named with the upload kept, corrected, previewed, paid once),
a message to one local worker read on their own page; axe-core audited and nothing wider than a phone.
Screenshots: batch-review-period, bulk-bonus-errors, bulk-bonus-preview, bulk-bonus-paid,
batch-message-worker, worker-inbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from annotation.models import Assignment, Batch
from crowd.models import Payment, Worker, WorkerMessage
from tests.browser.conftest import LAPTOP, PHONE, full_page_shot, overflow, serious_violations
from tests.factories import make_assignment, make_batch, make_researcher, make_worker

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-money"


def _audit(page: Page) -> None:
    assert serious_violations(page) == []
    page.set_viewport_size(PHONE)
    assert overflow(page) == []
    page.set_viewport_size(LAPTOP)


def _sign_in(page: Page, base: str, path: str) -> None:
    make_researcher("rosa", password=PASSWORD)
    page.goto(f"{base}/accounts/login/?next={path}")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()


@pytest.fixture
def batch() -> Batch:
    batch = make_batch(name="Pilot", reward_cents=50, options={"auto_approve_seconds": 86400})
    batch.publish()
    return batch


def test_review_period_and_bonuses_from_a_csv(
    live_server: Any, page: Page, batch: Batch, artifacts_dir: Path
) -> None:
    done = [
        make_assignment(
            batch=batch, worker=make_worker(f"w{i}"), status=Assignment.Status.APPROVED, answers={"q": "a"}
        )
        for i in range(2)
    ]
    waiting = make_assignment(
        batch=batch, worker=make_worker("w-wait"), status=Assignment.Status.SUBMITTED, answers={"q": "a"}
    )
    Assignment.objects.filter(pk=waiting.pk).update(submitted_at=timezone.now())
    base = live_server.url
    _sign_in(page, base, f"/batches/{batch.pk}/")

    period = page.locator("#auto-approval")
    expect(period).to_contain_text("approved and paid automatically 1 day after it is submitted")
    expect(period).to_contain_text("1 submission waiting for review; the oldest is approved automatically at")
    full_page_shot(page, artifacts_dir / "batch-review-period.png")
    _audit(page)

    page.get_by_role("link", name="Bonuses from a CSV").click()
    a, b = (d.worker.pseudonym for d in done)
    bad = f"worker,amount,reason\n{a},0.50,Careful answers\n{b},fifty,Stayed longer\n"
    page.set_input_files(
        "#bonus-file", files=[{"name": "bonuses.csv", "mimeType": "text/csv", "buffer": bad.encode()}]
    )
    page.get_by_role("button", name="Preview the bonuses").click()
    errors = page.locator("#bonus-errors")
    expect(errors).to_contain_text("Nothing was paid.")
    expect(errors).to_contain_text("Line 3: the amount 'fifty' is not a number such as 0.50")
    expect(page.locator("#bonus-csv")).to_have_value(bad)  # the upload is kept to correct
    full_page_shot(page, artifacts_dir / "bulk-bonus-errors.png")
    _audit(page)

    page.fill("#bonus-csv", bad.replace("fifty", "1.00"))
    page.get_by_role("button", name="Preview the bonuses").click()
    preview = page.locator("#bonus-preview")
    expect(preview).to_contain_text("2 bonuses, 1.50 USD")
    expect(preview).to_contain_text("Stayed longer")
    assert not Payment.objects.exists()
    full_page_shot(page, artifacts_dir / "bulk-bonus-preview.png")
    _audit(page)

    page.get_by_role("button", name="Pay 2 bonuses (1.50 USD)").click()
    results = page.locator("#bonus-results")
    expect(results.locator(".badge.ok")).to_have_count(2)
    expect(page.locator(".message.success")).to_contain_text("2 bonuses sent or already paid (1.50 USD)")
    assert sorted(Payment.objects.filter(kind=Payment.Kind.BONUS).values_list("amount_cents", flat=True)) == [
        50,
        100,
    ]
    full_page_shot(page, artifacts_dir / "bulk-bonus-paid.png")
    _audit(page)

    page.go_back()  # the preview again: paying it a second time pays nothing more
    page.get_by_role("button", name="Pay 2 bonuses (1.50 USD)").click()
    expect(page.locator("#bonus-results")).to_contain_text("already paid")
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 2


def test_message_one_local_worker_who_reads_it_on_their_page(
    live_server: Any, page: Page, browser: Any, batch: Batch, artifacts_dir: Path
) -> None:
    from crowd.invites import create_invites

    base = live_server.url
    invite = create_invites(1, batch=batch, base_url=base)[0].url
    context = browser.new_context(viewport=PHONE)
    worker_page = context.new_page()
    worker_page.goto(invite)
    worker_page.get_by_role("button", name="Start").click()
    worker = Worker.objects.get(user__isnull=False)
    make_assignment(batch=batch, worker=worker, status=Assignment.Status.SUBMITTED, answers={"q": "a"})
    make_assignment(batch=batch, worker=make_worker("someone-else"), status=Assignment.Status.SUBMITTED)

    _sign_in(page, base, f"/batches/{batch.pk}/")
    card = page.locator("#message-workers")
    expect(card).to_contain_text("Every worker of this batch (2)")
    card.get_by_label("To").select_option(label=worker.pseudonym)
    card.get_by_label("Subject").fill("Thank you")
    card.get_by_label("Message").fill("Your answers were careful.\nA second round opens on Monday.")
    full_page_shot(page, artifacts_dir / "batch-message-worker.png")
    _audit(page)
    card.get_by_role("button", name="Send to their work page").click()
    expect(page.locator(".message.success")).to_contain_text(f"Message sent to {worker.pseudonym}.")

    worker_page.goto(f"{base}/work/")
    inbox = worker_page.locator("#worker-inbox")
    expect(inbox).to_contain_text("Thank you")
    expect(inbox).to_contain_text("A second round opens on Monday.")
    expect(inbox.locator(".badge")).to_have_text("new")
    full_page_shot(worker_page, artifacts_dir / "worker-inbox.png")
    assert serious_violations(worker_page) == [] and overflow(worker_page) == []
    worker_page.reload()
    expect(inbox.locator(".badge")).to_have_count(0)  # read once shown
    assert WorkerMessage.objects.get().worker == worker
    context.close()
