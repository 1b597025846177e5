"""The Webhooks pages in headless Chromium, by keyboard: a researcher registers an endpoint for a
receiver on loopback, reads the signing secret off the page, sends a test event that the receiver
refuses (400), sees the failed delivery in the log, replays it once the receiver accepts, and rotates
the secret (the old one is shown with its expiry); axe-core audited on a laptop and a phone, nothing
wider than a phone. Screenshots: webhooks-register, webhooks-failed, webhooks-replayed, webhooks-phone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import LAPTOP, PHONE, full_page_shot, overflow, serious_violations, tab_to
from tests.factories import make_researcher
from tests.webhook_receiver import Receiver
from webhooks import tasks
from webhooks.models import Delivery, Endpoint

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-webhooks"


def _audit(page: Page) -> None:
    assert serious_violations(page) == []
    page.set_viewport_size(PHONE)
    assert overflow(page) == []
    page.set_viewport_size(LAPTOP)


@pytest.fixture
def sent_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """The delivery job runs at once in the web process (the real task body, without a broker)."""
    monkeypatch.setattr(tasks.deliver, "delay", lambda pk: tasks.deliver.apply(args=(pk,)))


def test_register_test_event_failed_then_replayed_and_rotate(
    live_server: Any,
    page: Page,
    browser: Any,
    settings: Any,
    receiver: Receiver,
    sent_now: None,
    artifacts_dir: Path,
) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True  # the receiver listens on loopback
    settings.WEBHOOK_TIMEOUT_SECONDS = 5
    make_researcher("rita", password=PASSWORD)
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "rita")
    page.fill("#id_password", PASSWORD)
    page.keyboard.press("Enter")
    page.get_by_role("link", name="Webhooks").click()
    expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
    expect(page.get_by_text("No endpoint is registered.")).to_be_visible()
    _audit(page)

    # a private URL would be refused without the setting; here a bad scheme is, with the typing kept
    tab_to(page, "#id_url")
    page.keyboard.type("ftp://hooks.example.org/x")
    tab_to(page, "input[name=events][value='release.built']")
    page.keyboard.press("Space")
    page.get_by_role("button", name="Register").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert").first).to_be_visible()
    expect(page.locator("#id_url")).to_have_value("ftp://hooks.example.org/x")
    assert not Endpoint.objects.exists()
    _audit(page)

    page.locator("#id_url").fill(receiver.url)
    tab_to(page, "#id_description")
    page.keyboard.type("Lab pipeline")
    for value in ("batch.completed", "release.built"):
        box = page.locator(f"input[name=events][value='{value}']")
        if not box.is_checked():
            tab_to(page, f"input[name=events][value='{value}']")
            page.keyboard.press("Space")
    full_page_shot(page, artifacts_dir / "webhooks-register.png")
    page.get_by_role("button", name="Register").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("registered")
    endpoint = Endpoint.objects.get()
    assert endpoint.events == ["batch.completed", "release.built"] and endpoint.description == "Lab pipeline"
    secret = page.locator("#webhook-secret").input_value()
    assert secret == endpoint.secret and secret.startswith("whsec_")
    receiver.secret = secret  # the receiver is configured from what the page shows
    _audit(page)

    receiver.script = [400]
    page.get_by_role("button", name="Send a test event").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("ping event was queued")
    row = page.locator("tbody tr").first
    expect(row).to_contain_text("ping")
    expect(row).to_contain_text("failed")
    expect(row).to_contain_text("HTTP 400")
    assert len(receiver.received) == 1 and receiver.received[0].signature_ok
    row.get_by_text("log").click()
    expect(row).to_contain_text("#1")
    full_page_shot(page, artifacts_dir / "webhooks-failed.png")
    _audit(page)

    row.get_by_role("button", name="Replay").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("was queued again")
    expect(page.locator("tbody tr").first).to_contain_text("succeeded")
    delivery = Delivery.objects.get()
    assert delivery.status == "succeeded" and len(receiver.received) == 2
    assert receiver.received[1].signature_ok
    event_id = receiver.received[0].headers["Crowdqa-Event-Id"]
    assert receiver.received[1].headers["Crowdqa-Event-Id"] == event_id
    full_page_shot(page, artifacts_dir / "webhooks-replayed.png")

    page.get_by_role("combobox", name="Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No delivery yet.")).to_be_visible()
    page.get_by_role("combobox", name="Status").select_option("succeeded")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("tbody tr")).to_have_count(1)

    page.get_by_role("button", name="Rotate the secret").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("signed with both the new and the old secret")
    expect(page.locator("#webhook-previous-secret")).to_have_value(secret)
    new_secret = page.locator("#webhook-secret").input_value()
    assert new_secret != secret
    _audit(page)

    # the receiver still holds the old secret: a test event after the rotation is still accepted
    page.get_by_role("button", name="Send a test event").click()
    expect(page.locator("tbody tr").first).to_contain_text("succeeded")
    assert len(receiver.received) == 3 and receiver.received[2].signature_ok

    context = browser.new_context(viewport=PHONE, storage_state=page.context.storage_state())
    phone = context.new_page()
    phone.goto(f"{base}/webhooks/")
    expect(phone.get_by_role("link", name=receiver.url)).to_be_visible()
    assert serious_violations(phone) == [] and overflow(phone) == []
    phone.get_by_role("link", name=receiver.url).click()
    expect(phone.locator("tbody tr")).to_have_count(2)
    full_page_shot(phone, artifacts_dir / "webhooks-phone.png")
    assert serious_violations(phone) == [] and overflow(phone) == []
    context.close()
