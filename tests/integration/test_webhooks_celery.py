"""Webhook deliveries through a real Celery worker and Redis: an event stored on commit is sent by the
worker, retried with backoff after a 500 and a timeout, delivered signed, then replayed from the console.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from tests.factories import make_researcher
from tests.webhook_receiver import Receiver
from webhooks.events import emit
from webhooks.models import Delivery, Endpoint

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_delivery__retried_by_a_real_worker_then_replayed(
    broker: str,
    celery_worker_process,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    for name, value in {
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "WEBHOOK_TIMEOUT_SECONDS": "1",
        "WEBHOOK_RETRY_BASE_SECONDS": "0.5",
        "WEBHOOK_MAX_ATTEMPTS": "5",
    }.items():
        monkeypatch.setenv(name, value)
    settings.WEBHOOK_ALLOW_PRIVATE = True
    receiver.hang_seconds = 2.5
    receiver.script = [500, "hang"]
    worker = celery_worker_process("default", "hooks", broker)
    endpoint = Endpoint.objects.create(url=receiver.url, events=["release.built"])
    receiver.secret = endpoint.secret
    with transaction.atomic():
        event = emit(
            "release.built", "release.built:1", {"release": {"id": 1, "name": "demo", "version": "1.0"}}
        )
    assert event is not None
    delivery = Delivery.objects.get(event=event)

    def settled() -> bool:
        delivery.refresh_from_db()
        return delivery.status != Delivery.Status.PENDING

    assert _wait_for(settled), f"worker alive={worker.poll() is None}, attempts={delivery.attempts}"
    assert delivery.status == Delivery.Status.SUCCEEDED and delivery.attempts == 3
    log = list(delivery.attempt_log.order_by("number").values_list("status_code", flat=True))
    assert log == [500, None, 200]
    assert len(receiver.received) == 3 and all(r.signature_ok for r in receiver.received)
    assert {r.headers["Crowdqa-Event-Id"] for r in receiver.received} == {str(event.uid)}

    client = Client()
    client.force_login(make_researcher("rita"))
    assert client.post(reverse("annotation:webhook-replay", args=[delivery.pk])).status_code == 302
    assert receiver.wait_for(4, timeout=30)
    assert _wait_for(lambda: settled() and delivery.status == Delivery.Status.SUCCEEDED)
    assert receiver.received[3].signature_ok and receiver.received[3].headers["Crowdqa-Event-Id"] == str(
        event.uid
    )
