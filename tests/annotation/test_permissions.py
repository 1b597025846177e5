"""Researcher sign-in and permissions: every action allowed or hidden, refusals that lose nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import override_settings

from annotation.models import Assignment
from annotation.permissions import ACTIONS, RESEARCHERS_GROUP, can
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


def test_researchers_group__exists_after_migrate_with_every_action() -> None:
    group = Group.objects.get(name=RESEARCHERS_GROUP)
    held = {
        f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")
    }
    assert set(ACTIONS.values()) <= held


def test_can__group_member_yes_plain_or_staff_account_no() -> None:
    researcher = make_researcher("amy")
    plain = get_user_model().objects.create_user("bob", password="pw-for-tests")
    staff_only = get_user_model().objects.create_user("sam", password="pw-for-tests", is_staff=True)
    assert all(can(researcher, action) for action in ACTIONS)
    assert not any(can(user, action) for user in (plain, staff_only, None) for action in ACTIONS)


def test_sign_in_page__signs_in_and_goes_back(client) -> None:  # type: ignore[no-untyped-def]
    make_researcher("amy", password="a-long-test-password")
    page = client.get("/review/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/?next=/review/")
    login = client.get(page["Location"])
    assert login.status_code == 200 and b'name="password"' in login.content
    bad = client.post("/accounts/login/", {"username": "amy", "password": "wrong", "next": "/review/"})
    assert bad.status_code == 200 and b'value="amy"' in bad.content and b"correct username" in bad.content
    ok = client.post(
        "/accounts/login/", {"username": "amy", "password": "a-long-test-password", "next": "/review/"}
    )
    assert ok.status_code == 302 and ok["Location"] == "/review/"
    home = client.get("/").content.decode()
    assert "Signed in as <strong>amy</strong>" in home and "Sign out" in home
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


@override_settings(CROWDQA_PUBLIC_DASHBOARD=True)
def test_public_dashboard__buttons_hidden_and_actions_send_to_sign_in(client, submitted) -> None:  # type: ignore[no-untyped-def]
    page = client.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "Approve" not in page and "Sign in</a> to approve" in page
    batch = client.get(f"/batches/{submitted.hit.batch_id}/").content.decode()
    assert "Create links" not in batch and 'value="publish"' not in batch and "Pause" not in batch
    queue = client.get("/review/").content.decode()
    assert 'name="assignment"' not in queue and "Approve ticked" not in queue
    response = client.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"})
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED


def test_reviewer_without_pay_or_launch__sees_only_review(client, submitted) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth.models import Permission

    reviewer = get_user_model().objects.create_user("rev", password="pw-for-tests")
    for dotted in (ACTIONS["view"], ACTIONS["review"]):
        app_label, codename = dotted.split(".")
        reviewer.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client.force_login(reviewer)
    page = client.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "Approve" in page
    batch = client.get(f"/batches/{submitted.hit.batch_id}/").content.decode()
    assert "Create links" not in batch and "Pause" not in batch
    assert client.post(f"/batches/{submitted.hit.batch_id}/status/", {"action": "pause"}).status_code == 403
    assert client.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"}).status_code == 302
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.APPROVED
    approved = client.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "Pay bonus" not in approved


def test_refused_rejection__keeps_the_typed_reason_and_speaks_plainly(client, submitted) -> None:  # type: ignore[no-untyped-def]
    client.force_login(make_researcher())
    submitted.status = Assignment.Status.APPROVED
    submitted.save(update_fields=["status"])
    response = client.post(
        f"/assignments/{submitted.pk}/review/", {"action": "reject", "reason": "Spans missing on card 3"}
    )
    assert response.status_code == 302
    # Put it back to submitted (as if a sync had raced), so the rejection form shows again.
    submitted.status = Assignment.Status.SUBMITTED
    submitted.save(update_fields=["status"])
    page = client.get(f"/assignments/{submitted.pk}/").content.decode()
    assert f"Submission {submitted.pk} was not changed: it is approved" in page
    assert "Assignment(" not in page
    assert "Spans missing on card 3</textarea>" in page


def test_approve__message_names_the_outcome(client, submitted) -> None:  # type: ignore[no-untyped-def]
    client.force_login(make_researcher())
    page = client.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"}, follow=True)
    assert (
        f"Approved submission {submitted.pk}; recorded for the local worker; reward 1.50 USD"
        in page.content.decode()
    )


def test_add_researcher_command__creates_a_group_member(capsys) -> None:  # type: ignore[no-untyped-def]
    call_command("add_researcher", "carol")
    user = get_user_model().objects.get(username="carol")
    assert not user.is_superuser and can(user, "launch") and can(user, "review")
    assert "password" in capsys.readouterr().out


def test_dates__one_format_with_the_time_zone(client, submitted) -> None:  # type: ignore[no-untyped-def]
    from django.utils import timezone

    client.force_login(make_researcher())
    page = client.get(f"/batches/{submitted.hit.batch_id}/").content.decode()
    stamp = timezone.localtime(submitted.submitted_at).strftime("%Y-%m-%d %H:%M")
    assert f"{stamp} UTC" in page
