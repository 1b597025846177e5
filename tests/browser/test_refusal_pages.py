"""Every refusal explains: a page that says what happened and where to go, never a bare "403 Forbidden".

A local worker's session opening researcher pages gets a page with a link to the worker's home (followed
with the keyboard); a signed-in account without the researcher permission is told what it may not do;
an unknown address gets a page with a way back; an expired form (CSRF) says to reload. Each page is
audited by axe-core and must not scroll sideways on a phone (390 px) or a laptop.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation.services.batches import BatchSpec, create_batch
from crowd.invites import create_invites
from tests.browser.conftest import SCREENS, overflow, serious_violations, tab_to
from tests.factories import make_textbook

pytestmark = pytest.mark.django_db(transaction=True)

PASSAGES = [
    "Mitochondria release energy from food molecules through cellular respiration in most cells.",
    "Chloroplasts are the organelles in which photosynthesis takes place in the leaves of plants.",
    "Enzymes are proteins that speed up chemical reactions in living things without being used up.",
]


def _audit(page: Page, screen: str) -> list[str]:
    return serious_violations(page) + overflow(page)


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_worker_session_on_researcher_pages__explains_and_links_home(
    live_server: Any, page: Page, screen: str
) -> None:
    make_textbook("demo-textbook", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="demo-textbook", limit=1))
    batch.publish()
    invite = create_invites(1, batch=batch, base_url=live_server.url)[0]
    page.set_viewport_size(SCREENS[screen])
    page.goto(invite.url)
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/a/**")

    for path in ("/", f"/batches/{batch.pk}/", "/review/", "/releases/", "/benchmarks/"):
        response = page.goto(live_server.url + path)
        assert response is not None and response.status == 403, path
        expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
        expect(page.locator("main")).to_contain_text("This page is for researchers")
        assert "403 Forbidden" not in page.content()
        assert _audit(page, screen) == [], path

    tab_to(page, "a[href='/work/']")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/work/")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    assert page.url.endswith("/work/")


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_account_without_permission_and_unknown_address__explain(
    live_server: Any, page: Page, screen: str
) -> None:
    get_user_model().objects.create_user("guest", password="pw-for-tests-1")
    page.set_viewport_size(SCREENS[screen])
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "guest")
    page.fill("#id_password", "pw-for-tests-1")
    page.get_by_role("button", name="Sign in").click()

    response = page.goto(live_server.url + "/review/")
    assert response is not None and response.status == 403
    expect(page.locator("main")).to_contain_text("Your account may not see the researcher pages")
    expect(page.locator("main")).to_contain_text("Ask an administrator")
    assert _audit(page, screen) == []

    response = page.goto(live_server.url + "/no/such/page/")
    assert response is not None and response.status == 404
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    expect(page.get_by_role("link", name="The start page")).to_be_visible()
    assert "Resolver404" not in page.content()
    assert _audit(page, screen) == []


def test_expired_form__says_to_reload(live_server: Any, page: Page) -> None:
    """A form whose CSRF cookie is gone (signed out in another tab) gets a page, not a bare 403."""
    page.goto(live_server.url + "/accounts/login/")
    page.context.clear_cookies()
    page.fill("#id_username", "anyone")
    page.fill("#id_password", "whatever")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="This form has expired")).to_be_visible()
    expect(page.locator("main")).to_contain_text("reload the page")
    assert serious_violations(page) == []
