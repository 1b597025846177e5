"""Messaging workers from the batch page: every worker or one, local workers reading it on their home
page (their own messages only, marked read once shown), platform workers through the platform; and
attempts to break it (other batches' workers, other roles, no CSRF token)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Batch
from crowd.invites import create_invites, redeem
from crowd.models import Worker, WorkerMessage
from crowd.providers import errors
from crowd.providers.local.provider import LocalProvider
from tests.factories import make_assignment, make_batch, make_researcher, make_worker

pytestmark = pytest.mark.django_db


def _local_worker(batch: Batch, name: str) -> tuple[Worker, Client]:
    """A local worker with a signed-in session (through a real invite) who did work in ``batch``."""
    token = create_invites(1, batch=batch, base_url="http://testserver")[0].url.rsplit("/", 2)[-2]
    worker = redeem(token)
    make_assignment(batch=batch, worker=worker, status=Assignment.Status.SUBMITTED, answers={"q": name})
    client = Client()
    client.force_login(worker.user)
    return worker, client


@pytest.fixture
def batch() -> Batch:
    batch = make_batch(name="Lab pilot", status=Batch.Status.PUBLISHED)
    return batch


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("rosa"))
    return client


def _send(client: Client, batch: Batch, to: str, subject: str = "Thanks", message: str = "Well done.") -> str:
    response = client.post(
        reverse("annotation:batch-message", args=[batch.pk]),
        {"to": to, "subject": subject, "message": message},
        follow=True,
    )
    return response.content.decode()


def test_everyone_then_one_worker_reads_it_on_their_home_page(researcher: Client, batch: Batch) -> None:
    ana, ana_client = _local_worker(batch, "ana")
    ben, ben_client = _local_worker(batch, "ben")
    page = researcher.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert 'id="message-workers"' in page and "Every worker of this batch (2)" in page
    assert "Send to their work page" in page

    assert "Message sent to 2 workers." in _send(
        researcher, batch, "all", "New HITs", "<b>Round two</b>\nopens"
    )
    assert "Message sent to" in _send(researcher, batch, str(ana.pk), "For you", "Extra thanks.")
    assert WorkerMessage.objects.filter(worker=ana).count() == 2
    assert WorkerMessage.objects.filter(worker=ben).count() == 1

    home = ana_client.get(reverse("worker:home")).content.decode()
    assert 'id="worker-inbox"' in home and "For you" in home and "New HITs" in home
    assert "&lt;b&gt;Round two&lt;/b&gt;<br>opens" in home  # escaped, line breaks kept
    assert home.count(">new</span>") == 2
    assert ">new</span>" not in ana_client.get(reverse("worker:home")).content.decode()  # read once shown
    assert "For you" not in ben_client.get(reverse("worker:home")).content.decode()  # their own only


def test_platform_workers_get_it_through_the_platform(researcher: Client, monkeypatch) -> None:  # noqa: ANN001
    sent: list[tuple] = []
    from crowd.providers.fake.provider import FakeProvider

    monkeypatch.setattr(
        FakeProvider,
        "notify_workers",
        lambda self, ids, subject, message, batch=None: sent.append((ids, subject)),
    )
    batch = make_batch(name="Fake", provider="fake")
    worker = make_worker("F1", platform="fake")
    make_assignment(batch=batch, worker=worker, status=Assignment.Status.SUBMITTED, answers={"q": "a"})
    from crowd.services.publishing import publish

    publish(batch)
    text = _send(researcher, batch, str(worker.pk), "Hello", "Thanks")
    assert sent == [(["F1"], "Hello")], text
    assert not WorkerMessage.objects.exists()


def test_attempts_to_break_it(researcher: Client, batch: Batch) -> None:
    ana, _ = _local_worker(batch, "ana")
    other_batch = make_batch(batch.corpus, name="Other", status=Batch.Status.PUBLISHED)
    outsider, _ = _local_worker(other_batch, "out")
    # A worker of another batch, a made-up id, empty and oversized texts: nothing is stored.
    assert "did no work in batch" in _send(researcher, batch, str(outsider.pk))
    for to in ("999999", "x", "-1", "１"):
        assert "Choose a worker of this batch." in _send(researcher, batch, to)
    assert "needs a subject and a text" in _send(researcher, batch, "all", "", "")
    assert "at most 4,096" in _send(researcher, batch, "all", "Long", "x" * 5000)
    assert not WorkerMessage.objects.exists()

    # Other roles: anonymous, the worker themselves, an account without the notify permission; no CSRF.
    url = reverse("annotation:batch-message", args=[batch.pk])
    worker_client = Client()
    worker_client.force_login(ana.user)
    plain = Client()
    plain.force_login(get_user_model().objects.create_user("plain", password="x" * 20))
    for client in (Client(), worker_client, plain):
        response = client.post(url, {"to": "all", "subject": "s", "message": "m"})
        assert response.status_code in (302, 403)
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(make_researcher("csrf"))
    assert csrf.post(url, {"to": "all", "subject": "s", "message": "m"}).status_code == 403
    assert researcher.get(url).status_code == 405
    assert not WorkerMessage.objects.exists()


def test_local_provider_refuses_ids_of_no_local_worker() -> None:
    with pytest.raises(errors.InvalidRequestError):
        LocalProvider().notify_workers(["nobody"], "s", "m")
