"""The Accounts page in headless Chromium, by keyboard: an admin invites a researcher (a taken name is
refused with what was typed kept), copies the set-password link, the researcher sets a password and
signs in, the admin deactivates another account; axe-core audited and nothing wider than a phone.
Screenshots: accounts-invite-error, accounts-link, accounts-set-password, accounts-deactivated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation.roles import role_of
from tests.browser.conftest import LAPTOP, PHONE, full_page_shot, overflow, serious_violations, tab_to
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-accounts"


def _audit(page: Page) -> None:
    assert serious_violations(page) == []
    page.set_viewport_size(PHONE)
    assert overflow(page) == []
    page.set_viewport_size(LAPTOP)


def _sign_in(page: Page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.keyboard.press("Enter")


def test_admin_invites_a_researcher_who_sets_a_password_and_deactivates_another(
    live_server: Any, page: Page, browser: Any, artifacts_dir: Path
) -> None:
    get_user_model().objects.create_superuser("boss", password=PASSWORD)
    make_researcher("taken")
    base = live_server.url
    _sign_in(page, base, "boss", PASSWORD)
    page.get_by_role("link", name="Accounts").click()
    expect(page.get_by_role("heading", name="Researcher accounts")).to_be_visible()
    expect(page.locator("#accounts")).to_contain_text("boss (you)")
    expect(page.locator("#accounts")).to_contain_text("Your own account: another admin changes it.")
    _audit(page)
    page.get_by_role("link", name="Change your password").click()
    expect(page.get_by_role("heading", name="Change your password")).to_be_visible()
    _audit(page)
    page.go_back()

    tab_to(page, "#id_username")
    page.keyboard.type("taken")
    page.keyboard.press("Tab")
    page.keyboard.type("nadia@lab.example")
    tab_to(page, "#invite-button")
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("The user name taken is taken")
    expect(page.locator("#id_email")).to_have_value("nadia@lab.example")
    full_page_shot(page, artifacts_dir / "accounts-invite-error.png")
    _audit(page)

    page.locator("#id_username").fill("nadia")
    tab_to(page, "#invite-button")
    page.keyboard.press("Enter")
    expect(page.locator("#set-password-link")).to_contain_text("Set-password link for nadia")
    link = page.locator("#link-text").input_value()
    assert link.startswith(f"{base}/accounts/reset/")
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("#set-password-link")).to_contain_text("Copied")
    expect(page.locator("#accounts")).to_contain_text("invited, no password set yet")
    full_page_shot(page, artifacts_dir / "accounts-link.png")
    _audit(page)

    context = browser.new_context(viewport=PHONE)
    nadia = context.new_page()
    nadia.goto(link)
    expect(nadia.get_by_role("heading", name="Set your password")).to_be_visible()
    nadia.get_by_label("New password", exact=True).fill("a-long-new-pass-17")
    nadia.get_by_label("New password confirmation").fill("a-long-new-pass-17")
    full_page_shot(nadia, artifacts_dir / "accounts-set-password.png")
    assert serious_violations(nadia) == [] and overflow(nadia) == []
    nadia.get_by_role("button", name="Set the password").click()
    expect(nadia.get_by_role("heading", name="Password set")).to_be_visible()
    _sign_in(nadia, base, "nadia", "a-long-new-pass-17")
    expect(nadia.get_by_text("Signed in as")).to_contain_text("nadia")
    expect(nadia.get_by_role("link", name="Accounts")).to_have_count(0)
    nadia.goto(link)
    expect(nadia.get_by_role("alert")).to_contain_text("This link no longer works")
    context.close()

    taken = get_user_model().objects.get(username="taken")
    page.goto(f"{base}/accounts/manage/")
    row = page.locator(f"#account-{taken.pk}")
    row.get_by_role("button", name="Deactivate").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".message.success")).to_contain_text("taken is deactivated")
    expect(page.locator(f"#account-{taken.pk}")).to_contain_text("deactivated")
    full_page_shot(page, artifacts_dir / "accounts-deactivated.png")
    _audit(page)
    taken.refresh_from_db()
    assert not taken.is_active
    assert role_of(get_user_model().objects.get(username="nadia")) == "researcher"
