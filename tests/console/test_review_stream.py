"""console/stream_views.py and the review actions' ``next``: researchers only, same-site returns only."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import Client

from annotation.models import Assignment
from tests.browser.test_review_stream import _three_submissions
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("r"))
    return client


def test_stream__needs_a_researcher_and_filters(client: Client, researcher: Client) -> None:
    first, second, third = _three_submissions()
    response = client.get("/review/stream/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    html = researcher.get(f"/review/stream/?at={second.pk}").content.decode()
    assert "Submission 2 of 3" in html and f"Assignment {second.pk}" in html
    empty = researcher.get("/review/stream/?status=approved", follow=True)  # nothing decided yet
    assert empty.redirect_chain == [("/review/?status=approved", 302)]
    assert "Nothing to review with these filters." in empty.content.decode()
    for junk in ("?at=abc", "?at=99999999", "?batch=x&status=nonsense", "?at=%00"):
        assert researcher.get(f"/review/stream/{junk}").status_code == 200, junk


def test_review__next_off_site_is_ignored_and_category_checked(researcher: Client) -> None:
    """Security: a forged ``next`` never leaves the site; an unknown category becomes OTHER."""
    first, second, _ = _three_submissions()
    response = researcher.post(
        f"/assignments/{first.pk}/review/", {"action": "approve", "next": "https://evil.example/x"}
    )
    assert response.status_code == 302 and response["Location"] == "/review/stream/"
    with mock.patch("crowd.services.review.reject_assignment") as reject:
        researcher.post(
            f"/assignments/{second.pk}/review/",
            {"action": "reject", "reason": "x" * 120, "category": "'; DROP", "next": "/review/stream/"},
        )
    assert reject.call_args.args[2] == "OTHER"
    assert Assignment.objects.get(pk=first.pk).status == Assignment.Status.APPROVED


def test_assignment_page__blocks_the_worker_from_the_submission(researcher: Client) -> None:
    """Blocking is offered on every submission's page, not only in the batch's worker table."""
    first, _, _ = _three_submissions()
    html = researcher.get(f"/assignments/{first.pk}/").content.decode()
    assert f'action="/workers/{first.worker_id}/block/"' in html and 'id="block-reason"' in html
    response = researcher.post(
        f"/workers/{first.worker_id}/block/",
        {"action": "block", "reason": "copied answers", "next": f"/assignments/{first.pk}/"},
    )
    assert response["Location"] == f"/assignments/{first.pk}/"
    first.worker.refresh_from_db()
    assert first.worker.blocked
