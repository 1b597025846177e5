"""Researcher pages on a batch: dashboard, a submission with its spans, approve / reject / bonus / block."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import Assignment
from crowd.models import Payment, Worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user(
        "r", password="pw-for-tests", is_staff=True, is_superuser=True
    )
    client.force_login(user)
    return client


def test_batch_page__lists_submission_and_dashboard(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    # A platform id long enough never to occur by chance in the page (a CSRF token can hold "w1").
    Worker.objects.filter(pk=submitted.worker_id).update(platform_id="A3KX9PLATFORMID27Q")
    body = staff.get(f"/batches/{submitted.hit.batch_id}/").content.decode()
    assert f"/assignments/{submitted.pk}/" in body
    assert submitted.worker.pseudonym in body and "A3KX9PLATFORMID27Q" not in body
    assert "median time per HIT" in body and "too_short" in body
    reason = f"block-reason-{submitted.worker_id}"  # the block form's reason box has a label
    assert f'id="{reason}"' in body and f'<label class="visually-hidden" for="{reason}">' in body


def test_assignment_page__shows_spans_with_offsets_and_pages(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    body = staff.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "“Late work loses 10% per day.”" in body and "[30–58, page 2]" in body
    admin = staff.get(f"/admin/annotation/assignment/{submitted.pk}/change/").content.decode()
    assert "[30:58] p.2: Late work loses 10% per day." in admin


def test_review__approve_pays_reward_once_then_bonus_once(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    url = f"/assignments/{submitted.pk}/review/"
    assert staff.post(url, {"action": "approve"}).status_code == 302
    staff.post(url, {"action": "approve"})  # a double click
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.APPROVED
    assert Payment.objects.filter(assignment=submitted, kind="reward").count() == 1
    for _ in range(2):
        staff.post(f"/assignments/{submitted.pk}/bonus/", {"cents": "50", "reason": "Thorough spans"})
    bonuses = Payment.objects.filter(assignment=submitted, kind="bonus")
    assert bonuses.count() == 1 and bonuses.get().amount_cents == 50


def test_review__reject_needs_reason_and_keeps_message(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    url = f"/assignments/{submitted.pk}/review/"
    page = staff.post(url, {"action": "reject", "reason": "  "}, follow=True).content.decode()
    assert "reason" in page
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED
    staff.post(url, {"action": "reject", "reason": "Spans were not copied from the syllabus."})
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.REJECTED and submitted.feedback.startswith("Spans")


def test_actions__need_a_researcher_on_a_public_dashboard(client, settings, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    settings.CROWDQA_PUBLIC_DASHBOARD = True
    page = f"/assignments/{submitted.pk}/"
    assert client.get(page).status_code == 200
    refused = client.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"}, HTTP_REFERER=page)
    assert refused.status_code == 302 and refused["Location"] == f"/accounts/login/?next={page}"
    block = client.post(f"/workers/{submitted.worker_id}/block/", {"reason": "x"})
    assert block.status_code == 302 and block["Location"].startswith("/accounts/login/")
    staff_only = get_user_model().objects.create_user("staff-only", password="pw-for-tests", is_staff=True)
    client.force_login(staff_only)
    assert client.post(f"/workers/{submitted.worker_id}/block/", {"reason": "x"}).status_code == 403
    submitted.refresh_from_db()
    submitted.worker.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED and not submitted.worker.blocked


def test_block_worker__blocks_claims(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    worker = submitted.worker
    staff.post(
        f"/workers/{worker.pk}/block/",
        {"action": "block", "reason": "copied answers", "next": "https://evil.test/"},
    )
    worker.refresh_from_db()
    assert worker.blocked and worker.block_reason == "copied answers"
    staff.post(f"/workers/{worker.pk}/block/", {"action": "unblock"})
    worker.refresh_from_db()
    assert not worker.blocked


def test_review__approve_on_an_unpaid_local_batch_says_so(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    """A zero reward reads "pays no reward", never "0.00 USD: pending (not yet sent)"."""
    type(submitted.hit.batch).objects.filter(pk=submitted.hit.batch_id).update(reward_cents=0)
    response = staff.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"}, follow=True)
    body = response.content.decode()
    assert "recorded for the local worker; this batch pays no reward" in body
    assert "0.00 USD" not in body and "not yet sent" not in body
