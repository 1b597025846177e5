"""Deliveries against a receiver on loopback: signed, retried after a 500 or a timeout, failed on a 4xx,
refused for a private address, idempotent per event key, replayable; the job and the sweep."""

from __future__ import annotations

import json
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.unit.webhooks.test_transport import NAME, Server, rebinding, servers  # noqa: F401
from tests.webhook_receiver import Receiver
from webhooks import sending, tasks
from webhooks.events import emit
from webhooks.models import Attempt, Delivery, Endpoint, Event
from webhooks.signing import verify

pytestmark = pytest.mark.django_db


@pytest.fixture
def hooks(settings, receiver: Receiver) -> Receiver:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    settings.WEBHOOK_MAX_ATTEMPTS = 3
    settings.WEBHOOK_RETRY_BASE_SECONDS = 10
    settings.WEBHOOK_RETRY_MAX_SECONDS = 100
    receiver.hang_seconds = 1.5
    return receiver


def _endpoint(receiver: Receiver, events: tuple[str, ...] = ("batch.completed",)) -> Endpoint:
    endpoint = Endpoint.objects.create(url=receiver.url, events=list(events))
    receiver.secret = endpoint.secret
    return endpoint


def _emit_one(receiver: Receiver, queued: list[int], django_capture_on_commit_callbacks) -> Delivery:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        event = emit("batch.completed", "batch.completed:7", {"batch": {"id": 7}})
    assert event is not None
    return Delivery.objects.get(event=event)


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Delivery ids queued for the job (the broker is not used here)."""
    ids: list[int] = []
    monkeypatch.setattr(tasks.deliver, "delay", ids.append)
    return ids


def test_emit__stores_once_per_key_and_queues_after_commit(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    Endpoint.objects.create(url="http://127.0.0.1:9/other", events=["release.built"])  # not subscribed
    with django_capture_on_commit_callbacks(execute=True):
        first = emit("batch.completed", "batch.completed:7", {"batch": {"id": 7}})
        second = emit("batch.completed", "batch.completed:7", {"batch": {"id": 7}})
    assert first is not None and second == first
    assert Event.objects.count() == 1 and Delivery.objects.count() == 1
    assert queued == [Delivery.objects.get().pk]


def test_emit__nobody_listening_stores_nothing(queued: list[int]) -> None:
    Endpoint.objects.create(url="http://127.0.0.1:9/x", events=["batch.completed"], active=False)
    assert emit("batch.completed", "batch.completed:1", {}) is None
    assert not Event.objects.exists() and queued == []


def test_attempt__signed_body_with_event_id_succeeds(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    outcome = sending.attempt_delivery(delivery.pk)
    assert outcome.sent and outcome.status == "succeeded" and outcome.retry_in is None
    [got] = hooks.received
    assert got.signature_ok
    body = json.loads(got.body)
    assert body["type"] == "batch.completed" and body["data"] == {"batch": {"id": 7}}
    assert got.headers["Crowdqa-Event-Id"] == body["id"] == str(delivery.event.uid)
    delivery.refresh_from_db()
    assert delivery.delivered_at is not None and delivery.last_status_code == 200
    # a stale job for a delivered delivery sends nothing
    assert not sending.attempt_delivery(delivery.pk).sent
    assert len(hooks.received) == 1


def test_attempt__500_then_timeout_then_200_retries_with_backoff(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    hooks.script = [500, "hang"]
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    first = sending.attempt_delivery(delivery.pk)
    assert first.status == "pending" and first.retry_in == 10
    second = sending.attempt_delivery(delivery.pk)
    assert second.status == "pending" and second.retry_in == 40
    third = sending.attempt_delivery(delivery.pk)
    assert third.status == "succeeded"
    log = list(Attempt.objects.filter(delivery=delivery).order_by("number"))
    assert [a.status_code for a in log] == [500, None, 200]
    assert "timed out" in log[1].error
    assert len(hooks.received) == 3 and all(r.signature_ok for r in hooks.received)
    assert len({r.headers["Crowdqa-Event-Id"] for r in hooks.received}) == 1  # same id on every attempt


def test_attempt__gives_up_after_max_attempts(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    hooks.script = [503, 503, 503, 200]
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    outcomes = [sending.attempt_delivery(delivery.pk) for _ in range(4)]
    assert [o.status for o in outcomes] == ["pending", "pending", "failed", "failed"]
    assert not outcomes[3].sent and len(hooks.received) == 3


def test_attempt__a_4xx_fails_at_once_and_replay_sends_again(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    hooks.script = [400]
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    assert sending.attempt_delivery(delivery.pk).status == "failed"
    delivery.refresh_from_db()
    delivery.replay()
    outcome = sending.attempt_delivery(delivery.pk)
    assert outcome.status == "succeeded"
    assert [r.headers["Crowdqa-Event-Id"] for r in hooks.received] == [str(delivery.event.uid)] * 2


def test_attempt__private_address_refused_without_the_setting(
    hooks: Receiver,
    settings,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    settings.WEBHOOK_ALLOW_PRIVATE = False
    outcome = sending.attempt_delivery(delivery.pk)
    assert outcome.status == "failed" and hooks.received == []
    delivery.refresh_from_db()
    assert "WEBHOOK_ALLOW_PRIVATE" in delivery.last_error


def test_attempt__a_rebinding_name_is_sent_only_to_the_checked_address(
    settings,
    queued: list[int],
    rebinding: list[str],  # noqa: F811 - the fixture imported above
    servers: tuple[Server, Server],  # noqa: F811
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    """The name answers a public address to the check and a private one afterwards: the attempt goes to
    the checked address; the next attempt's check sees the private answer and refuses it."""
    public, internal = servers
    settings.WEBHOOK_ALLOW_PRIVATE = False
    Endpoint.objects.create(url=f"http://{NAME}:{public.port}/hooks", events=["batch.completed"])
    with django_capture_on_commit_callbacks(execute=True):
        event = emit("batch.completed", "batch.completed:7", {"batch": {"id": 7}})
    delivery = Delivery.objects.get(event=event)
    assert sending.attempt_delivery(delivery.pk).status == "succeeded"
    assert public.hosts == [f"{NAME}:{public.port}"] and internal.hosts == []
    assert rebinding == [NAME]
    delivery.refresh_from_db()
    delivery.replay()
    assert sending.attempt_delivery(delivery.pk).status == "failed"
    delivery.refresh_from_db()
    assert "private" in delivery.last_error and internal.hosts == []


def test_attempt__a_name_that_does_not_resolve_is_retried(
    settings,
    monkeypatch: pytest.MonkeyPatch,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise socket.gaierror("Temporary failure in name resolution")

    settings.WEBHOOK_ALLOW_PRIVATE = False
    settings.WEBHOOK_RETRY_BASE_SECONDS = 10
    Endpoint.objects.create(url="https://hooks.example.test/h", events=["batch.completed"])
    with django_capture_on_commit_callbacks(execute=True):
        event = emit("batch.completed", "batch.completed:7", {"batch": {"id": 7}})
    monkeypatch.setattr(socket, "getaddrinfo", fail)
    outcome = sending.attempt_delivery(Delivery.objects.get(event=event).pk)
    assert outcome.status == "pending" and outcome.retry_in == 10


def test_attempt__a_held_delivery_is_not_sent_twice(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    Delivery.objects.filter(pk=delivery.pk).update(claimed_until=timezone.now() + timedelta(seconds=60))
    assert not sending.attempt_delivery(delivery.pk).sent
    assert hooks.received == []


def test_resend_overdue__queues_late_unheld_pending_deliveries(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    queued.clear()
    assert tasks.resend_overdue() == 0  # due now, not yet late
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    assert tasks.resend_overdue() == 1 and queued == [delivery.pk]


def test_deliver_task__runs_inline_without_retrying_in_eager_mode(
    hooks: Receiver,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    _endpoint(hooks)
    hooks.script = [500]
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    result = tasks.deliver.apply(args=(delivery.pk,)).get()
    assert result == {"delivery": delivery.pk, "sent": True, "status": "pending"}


def test_rotation__both_secrets_sign_during_the_overlap_then_only_the_new_one(
    hooks: Receiver,
    settings,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    settings.WEBHOOK_SECRET_OVERLAP_SECONDS = 3600
    endpoint = _endpoint(hooks)
    old = endpoint.secret
    endpoint.rotate_secret()
    endpoint.refresh_from_db()
    new = endpoint.secret
    assert new != old and endpoint.previous_secret == old and endpoint.signing_secrets() == [new, old]
    delivery = _emit_one(hooks, queued, django_capture_on_commit_callbacks)
    hooks.secret = old  # a receiver not yet updated
    assert sending.attempt_delivery(delivery.pk).status == "succeeded"
    header = hooks.received[-1].headers["Crowdqa-Signature"]
    assert hooks.received[-1].signature_ok and header.count("v1=") == 2
    for secret in (new, old):
        verify(secret, header, hooks.received[-1].body)
    # the window ends: the old secret no longer signs
    Endpoint.objects.filter(pk=endpoint.pk).update(
        previous_secret_expires=timezone.now() - timedelta(seconds=1)
    )
    delivery.replay()
    assert sending.attempt_delivery(delivery.pk).status == "succeeded"
    last = hooks.received[-1]
    assert not last.signature_ok and last.headers["Crowdqa-Signature"].count("v1=") == 1
    verify(new, last.headers["Crowdqa-Signature"], last.body)


def test_rotation__a_second_rotation_or_no_overlap_ends_the_older_secret(settings) -> None:  # type: ignore[no-untyped-def]
    settings.WEBHOOK_SECRET_OVERLAP_SECONDS = 3600
    endpoint = Endpoint.objects.create(url="https://hooks.example.org/", events=["ping"])
    first = endpoint.secret
    endpoint.rotate_secret()
    second = endpoint.secret
    endpoint.rotate_secret()
    assert endpoint.signing_secrets() == [endpoint.secret, second] and first not in endpoint.signing_secrets()
    endpoint.rotate_secret(overlap_seconds=0)
    endpoint.refresh_from_db()
    assert endpoint.signing_secrets() == [endpoint.secret] and endpoint.previous_secret_expires is None
