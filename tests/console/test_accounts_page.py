"""The Accounts page: invite with a set-password link, roles through the existing groups, deactivation,
the last admin kept, and attempts to break it (other roles, no CSRF token, forged ids, bad input)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from annotation.permissions import can
from annotation.roles import role_of
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

PAGE = "/accounts/manage/"


def _admin(username: str = "boss") -> Any:
    return get_user_model().objects.create_superuser(username, password="pw-for-tests-admin")


def _client(user: Any, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def _change(client: Client, user: Any, action: str, **data: str) -> Any:
    return client.post(reverse("annotation:account-change", args=[user.pk]), {"action": action, **data})


def _signs_in(username: str, password: str) -> bool:
    response = Client().post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302


def test_invite__link_sets_the_password_once_and_the_account_is_a_researcher() -> None:
    admin = _client(_admin())
    page = admin.get(PAGE)
    assert page.status_code == 200 and "boss" in page.content.decode() and "(you)" in page.content.decode()
    response = admin.post(PAGE, {"username": "nadia", "email": "nadia@lab.example", "role": "researcher"})
    html = response.content.decode()
    assert response.status_code == 200 and "Set-password link for nadia" in html
    nadia = get_user_model().objects.get(username="nadia")
    assert role_of(nadia) == "researcher" and not nadia.has_usable_password()
    assert all(can(nadia, action) for action in ("view", "launch", "review", "pay"))
    path = html.split('id="link-text" value="http://testserver', 1)[1].split('"', 1)[0]
    assert path.startswith("/accounts/reset/")
    visitor = Client()
    form_page = visitor.get(path, follow=True)
    assert "Set your password" in form_page.content.decode() and "nadia" in form_page.content.decode()
    set_url = form_page.redirect_chain[-1][0] if form_page.redirect_chain else path
    weak = visitor.post(set_url, {"new_password1": "short", "new_password2": "short"})
    assert weak.status_code == 200 and "too short" in weak.content.decode()
    done = visitor.post(
        set_url, {"new_password1": "a-long-new-pass-17", "new_password2": "a-long-new-pass-17"}
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert _signs_in("nadia", "a-long-new-pass-17")
    again = Client().get(path, follow=True).content.decode()
    assert "no longer works" in again


def test_invite__bad_input_keeps_what_was_typed_and_creates_nothing() -> None:
    admin = _client(_admin())
    make_researcher("taken")
    before = get_user_model().objects.count()
    cases = [
        ({"username": "has space", "email": "x@lab.example", "role": "researcher"}, "no spaces"),
        ({"username": "TAKEN", "email": "", "role": "researcher"}, "is taken"),
        ({"username": "okname", "email": "not-an-email", "role": "researcher"}, "valid email"),
        ({"username": "okname", "email": "", "role": "owner"}, "valid choice"),
        ({"username": "x" * 151, "email": "", "role": "researcher"}, "at most 150"),
        ({"username": "a/b", "email": "", "role": "researcher"}, "no spaces"),
        ({}, "required"),
    ]
    for data, expected in cases:
        response = admin.post(PAGE, data)
        html = response.content.decode()
        assert response.status_code == 400, data
        assert expected in html, (data, html[:200])
        if data.get("email") == "not-an-email":
            assert 'value="okname"' in html and 'value="not-an-email"' in html
    assert get_user_model().objects.count() == before


def test_roles_and_deactivation__through_the_researchers_group_and_superuser(caplog: Any) -> None:
    caplog.set_level("INFO", logger="annotation.roles")
    boss = _admin()
    admin = _client(boss)
    rita = make_researcher("rita", password="pw-for-tests-rita")
    assert _change(admin, rita, "role", role="admin").status_code == 302
    rita.refresh_from_db()
    assert role_of(rita) == "admin" and rita.is_superuser
    assert _change(admin, rita, "role", role="researcher").status_code == 302
    rita.refresh_from_db()
    assert role_of(rita) == "researcher" and not rita.is_superuser
    _change(admin, rita, "deactivate")
    rita.refresh_from_db()
    assert not rita.is_active and not _signs_in("rita", "pw-for-tests-rita")
    assert "deactivated" in admin.get(PAGE).content.decode()
    _change(admin, rita, "activate")
    rita.refresh_from_db()
    assert rita.is_active
    assert "account rita: role researcher -> admin by boss" in caplog.text
    assert "account rita deactivated by boss" in caplog.text
    viewer = get_user_model().objects.create_user("vic", password="pw-for-tests-vic")
    viewer.user_permissions.add(Permission.objects.get(codename="view_batch"))
    assert "Custom" in admin.get(PAGE).content.decode()
    _change(admin, viewer, "role", role="researcher")
    assert role_of(get_user_model().objects.get(pk=viewer.pk)) == "researcher"
    link = _change(admin, rita, "link")
    assert link.status_code == 200 and "Set-password link for rita" in link.content.decode()


def test_nobody_removes_their_own_last_admin_rights() -> None:
    boss = _admin()
    admin = _client(boss)
    for action, data in (("role", {"role": "researcher"}), ("deactivate", {})):
        response = _change(admin, boss, action, **data)
        assert response.status_code == 302
        boss.refresh_from_db()
        assert boss.is_superuser and boss.is_active
    assert "ask another admin" in admin.get(PAGE).content.decode()
    # Two admins: each may demote the other, but the last one standing is kept.
    second = _admin("second")
    assert _change(admin, second, "role", role="researcher").status_code == 302
    second.refresh_from_db()
    assert not second.is_superuser
    from annotation.roles import AccountChangeRefused, set_active, set_role

    # Two admins demoting each other at once: the one who comes second finds the other the last admin.
    stale = _admin("stale")
    get_user_model().objects.filter(pk=stale.pk).update(is_superuser=False)
    with pytest.raises(AccountChangeRefused, match="last active admin"):
        set_active(stale, boss, False)
    with pytest.raises(AccountChangeRefused, match="last active admin"):
        set_role(stale, boss, "researcher")
    boss.refresh_from_db()
    assert boss.is_active
    with pytest.raises(AccountChangeRefused, match="Only an admin"):
        set_role(second, boss, "researcher")


def test_who_may_not__other_roles_no_csrf_forged_ids() -> None:
    boss = _admin()
    rita = make_researcher("rita")
    viewer = get_user_model().objects.create_user("vic", password="pw-for-tests-vic")
    viewer.user_permissions.add(Permission.objects.get(codename="view_batch"))
    plain = get_user_model().objects.create_user("plain", password="pw-for-tests-plain")
    anonymous = Client()
    assert anonymous.get(PAGE).status_code == 302 and "/accounts/login/" in anonymous.get(PAGE)["Location"]
    assert _change(anonymous, rita, "deactivate").status_code == 302
    for user in (rita, viewer, plain):
        client = _client(user)
        assert client.get(PAGE).status_code == 403
        assert client.post(PAGE, {"username": "sneak", "role": "admin"}).status_code == 403
        assert _change(client, boss, "deactivate").status_code == 403
        assert _change(client, rita, "role", role="admin").status_code == 403
        assert _change(client, boss, "link").status_code == 403
    csrf = _client(boss, csrf=True)
    assert csrf.post(PAGE, {"username": "sneak", "role": "researcher"}).status_code == 403
    assert _change(csrf, rita, "deactivate").status_code == 403
    admin = _client(boss)
    assert _change(admin, plain, "role", role="admin").status_code == 404  # not a researcher account
    assert admin.post("/accounts/manage/999999/", {"action": "deactivate"}).status_code == 404
    assert admin.get(reverse("annotation:account-change", args=[rita.pk])).status_code == 405
    bad = _change(admin, rita, "promote")
    assert bad.status_code == 302 and "Choose one of the page" in admin.get(PAGE).content.decode()
    _change(admin, rita, "role", role="owner")
    assert "Choose one of the roles" in admin.get(PAGE).content.decode()
    rita.refresh_from_db()
    plain.refresh_from_db()
    assert rita.is_active and not rita.is_superuser and not plain.is_superuser
    assert not get_user_model().objects.filter(username="sneak").exists()
    html = _client(rita).get("/").content.decode()
    assert PAGE not in html and PAGE in admin.get("/").content.decode()


def test_account_admin_without_superuser__manages_researchers_but_grants_no_admin() -> None:
    boss = _admin()
    manager = make_researcher("mgr")
    manager.user_permissions.add(Permission.objects.get(codename="change_user"))
    manager = get_user_model().objects.get(pk=manager.pk)
    client = _client(manager)
    response = client.post(PAGE, {"username": "newbie", "role": "admin"})
    assert response.status_code == 400 and "Only an admin" in response.content.decode()
    rita = make_researcher("rita")
    _change(client, rita, "role", role="admin")
    _change(client, boss, "deactivate")
    rita.refresh_from_db()
    boss.refresh_from_db()
    assert not rita.is_superuser and boss.is_active
    assert client.post(PAGE, {"username": "newbie", "role": "researcher"}).status_code == 200
    refused = _change(client, boss, "link")  # a link to the admin's account would hand it over
    html = client.get(PAGE).content.decode()
    assert refused.status_code == 302 and "/accounts/reset/" not in html
    assert "Only an admin (superuser) may make a set-password link for an admin" in html
    assert "Set-password link for rita" in _change(client, rita, "link").content.decode()


def test_deactivated_account__its_open_session_loses_access_and_its_link_is_refused() -> None:
    boss = _admin()
    rita = make_researcher("rita")
    rita_session = _client(rita)
    assert rita_session.get("/review/").status_code == 200
    admin = _client(boss)
    _change(admin, rita, "deactivate")
    assert rita_session.get("/review/").status_code == 302
    assert _change(admin, rita, "link").status_code == 302
    assert "Activate rita first" in admin.get(PAGE).content.decode()
    assert _change(admin, boss, "link").status_code == 302
    assert "Change your own password" in admin.get(PAGE).content.decode()


def test_own_password_change__old_password_needed_and_input_kept() -> None:
    rita = make_researcher("rita", password="pw-for-tests-rita")
    assert Client().get("/accounts/password/").status_code == 302
    session = _client(rita)
    assert "Change your password" in session.get("/accounts/password/").content.decode()
    wrong = session.post(
        "/accounts/password/",
        {
            "old_password": "nope",
            "new_password1": "a-long-new-pass-17",
            "new_password2": "a-long-new-pass-17",
        },
    )
    assert wrong.status_code == 200 and "incorrectly" in wrong.content.decode()
    done = session.post(
        "/accounts/password/",
        {
            "old_password": "pw-for-tests-rita",
            "new_password1": "a-long-new-pass-17",
            "new_password2": "a-long-new-pass-17",
        },
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/password/done/"
    assert _signs_in("rita", "a-long-new-pass-17") and not _signs_in("rita", "pw-for-tests-rita")
    assert session.get("/review/").status_code == 200  # still signed in after the change
