"""Sign-in brute force, replayed: wrong passwords are locked out per account and per client, on both pages.

Before, 200 wrong passwords on ``/accounts/login/`` met no lockout and then the right one worked, and
``/work/login/`` behaved the same and also signed researcher accounts in.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.factories import make_researcher, make_worker

pytestmark = pytest.mark.django_db

PAGES = ("/accounts/login/", "/work/login/")


def _client(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def _worker_account(username: str = "worker1", password: str = "right-horse-battery") -> Any:
    user = get_user_model().objects.create_user(username, password=password)
    make_worker(username, user=user)
    return user


@pytest.mark.parametrize("page", PAGES)
def test_brute_force__the_account_locks_then_even_the_right_password_fails(page: str, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 5
    if page == "/work/login/":
        _worker_account("victim", "right-horse-battery")
    else:
        make_researcher("victim", password="right-horse-battery")
    for attempt in range(5):
        # a different client address each time: the account's own count locks it at the fifth failure
        response = _client(f"10.0.0.{attempt + 1}").post(
            page, {"username": "victim", "password": f"wrong-{attempt}"}
        )
        assert response.status_code == (200 if attempt < 4 else 429)
    client = _client("10.0.1.1")
    locked = client.post(page, {"username": "victim", "password": "right-horse-battery"})
    assert locked.status_code == 429 and "_auth_user_id" not in client.session


@pytest.mark.parametrize("page", PAGES)
def test_brute_force__one_client_spraying_accounts_is_locked_out(page: str, settings: Any) -> None:
    settings.AXES_FAILURE_LIMIT = 5
    _worker_account("real-worker", "right-horse-battery")
    make_researcher("real-researcher", password="right-horse-battery")
    attacker = _client("10.9.9.9")
    for attempt in range(5):
        status = attacker.post(page, {"username": f"guess-{attempt}", "password": "x"}).status_code
        assert status == (200 if attempt < 4 else 429)
    username = "real-worker" if page == "/work/login/" else "real-researcher"
    assert attacker.post(page, {"username": username, "password": "right-horse-battery"}).status_code == 429
    honest = _client("10.1.1.1").post(page, {"username": username, "password": "right-horse-battery"})
    assert honest.status_code == 302  # the account itself is not locked by someone else's guesses


def test_worker_sign_in__never_signs_a_researcher_in() -> None:
    make_researcher("researcher", password="right-horse-battery")
    admin = get_user_model().objects.create_superuser("admin", password="right-horse-battery")
    make_worker("admin-as-worker", user=admin)  # even with a worker row
    for username in ("researcher", "admin"):
        client = _client("10.2.2.2")
        response = client.post("/work/login/", {"username": username, "password": "right-horse-battery"})
        assert response.status_code == 200 and "_auth_user_id" not in client.session
        assert client.get("/review/").status_code in (302, 403)
    _worker_account("worker1", "right-horse-battery")
    client = _client("10.3.3.3")
    assert (
        client.post("/work/login/", {"username": "worker1", "password": "right-horse-battery"}).status_code
        == 302
    )
    assert client.get("/work/").status_code == 200
