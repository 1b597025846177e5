"""The Webhooks pages: a researcher registers an endpoint, reads its log, replays and pings; an account
that may only view can read but changes nothing; private URLs are refused."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from tests.factories import make_researcher
from webhooks import tasks
from webhooks.models import Delivery, Endpoint, Event

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []
    monkeypatch.setattr(tasks.deliver, "delay", ids.append)
    return ids


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("rita"))
    return client


@pytest.fixture
def viewer() -> Client:
    user = get_user_model().objects.create_user("vic", password="pw-for-tests")
    user.user_permissions.add(
        Permission.objects.get(codename="view_batch", content_type__app_label="annotation")
    )
    client = Client()
    client.force_login(user)
    return client


def test_register__creates_endpoint_with_secret_and_shows_it(researcher: Client) -> None:
    answer = researcher.post(
        reverse("annotation:webhooks"),
        {
            "url": "https://hooks.example.org/crowdqa",
            "events": ["submission.received", "release.built"],
            "active": "on",
        },
    )
    endpoint = Endpoint.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse(
        "annotation:webhook", args=[endpoint.pk]
    )
    assert endpoint.events == ["release.built", "submission.received"] and endpoint.secret.startswith(
        "whsec_"
    )
    page = researcher.get(answer["Location"]).content.decode()
    assert endpoint.secret in page
    assert (
        "https://hooks.example.org/crowdqa" in researcher.get(reverse("annotation:webhooks")).content.decode()
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/x",
        "http://localhost/x",
        "http://169.254.169.254/",
        "ftp://example.org/",
        "nonsense",
    ],
)
def test_register__refuses_private_or_bad_urls(researcher: Client, url: str) -> None:
    answer = researcher.post(reverse("annotation:webhooks"), {"url": url, "events": ["release.built"]})
    assert answer.status_code == 200 and not Endpoint.objects.exists()
    assert "field-error" in answer.content.decode()


def test_register__needs_an_event(researcher: Client) -> None:
    answer = researcher.post(reverse("annotation:webhooks"), {"url": "https://hooks.example.org/"})
    assert answer.status_code == 200 and not Endpoint.objects.exists()


def test_viewer__reads_but_cannot_change_or_see_the_secret(viewer: Client, queued: list[int]) -> None:
    endpoint = Endpoint.objects.create(url="https://hooks.example.org/", events=["release.built"])
    event = Event.objects.create(key="release.built:1", type="release.built", data={})
    delivery = Delivery.objects.create(endpoint=endpoint, event=event, status=Delivery.Status.FAILED)
    assert viewer.get(reverse("annotation:webhooks")).status_code == 200
    endpoint.rotate_secret()
    page = viewer.get(reverse("annotation:webhook", args=[endpoint.pk]))
    assert page.status_code == 200 and endpoint.secret not in page.content.decode()
    assert endpoint.previous_secret not in page.content.decode()
    refused = [
        viewer.post(
            reverse("annotation:webhooks"), {"url": "https://x.example.org/", "events": ["release.built"]}
        ),
        viewer.post(reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "delete"}),
        viewer.post(reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "rotate"}),
        viewer.post(reverse("annotation:webhook-replay", args=[delivery.pk])),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    viewer.post(
        reverse("annotation:webhook", args=[endpoint.pk]),
        {"url": "https://evil.example.org/", "events": ["ping"]},
    )
    endpoint.refresh_from_db()
    delivery.refresh_from_db()
    assert Endpoint.objects.count() == 1 and endpoint.url == "https://hooks.example.org/"
    assert delivery.status == "failed" and queued == []


def test_anonymous__is_sent_to_sign_in() -> None:
    answer = Client().get(reverse("annotation:webhooks"))
    assert answer.status_code == 302 and "login" in answer["Location"]


def test_replay_ping_rotate_delete(researcher: Client, queued: list[int]) -> None:
    endpoint = Endpoint.objects.create(url="https://hooks.example.org/", events=["release.built"])
    event = Event.objects.create(key="release.built:1", type="release.built", data={})
    delivery = Delivery.objects.create(
        endpoint=endpoint, event=event, status=Delivery.Status.FAILED, attempts=8
    )
    with_callbacks = researcher.post(reverse("annotation:webhook-replay", args=[delivery.pk]))
    assert with_callbacks.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.attempts == 0
    researcher.post(reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "ping"})
    assert Delivery.objects.filter(endpoint=endpoint, event__type="ping").count() == 1
    old = endpoint.secret
    rotated = researcher.post(
        reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "rotate"}, follow=True
    )
    endpoint.refresh_from_db()
    page = rotated.content.decode()
    assert endpoint.secret != old and endpoint.previous_secret == old
    assert "signed with both the new and the old secret" in page
    assert 'id="webhook-previous-secret"' in page and old in page and endpoint.secret in page
    researcher.post(reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "bogus"})
    researcher.post(reverse("annotation:webhook-action", args=[endpoint.pk]), {"action": "delete"})
    assert not Endpoint.objects.exists() and not Delivery.objects.exists()


def test_detail__filters_and_bad_pages_do_not_fail(researcher: Client) -> None:
    endpoint = Endpoint.objects.create(url="https://hooks.example.org/", events=["release.built"])
    for query in ("?status=failed", "?status=bogus", "?page=999", "?page=x"):
        assert researcher.get(reverse("annotation:webhook", args=[endpoint.pk]) + query).status_code == 200
    assert researcher.get(reverse("annotation:webhook", args=[999999])).status_code == 404
    assert researcher.post(reverse("annotation:webhook-replay", args=[999999])).status_code == 404
