"""Two simultaneous bonus requests with one idempotency key pay once (ledger claim).

The fake provider waits between reading the ledger and paying (``pay_delay``), so without the claim both
requests would read "not paid" and both pay. Threads need their own connections: a file database
(SQLite's default here) or PostgreSQL (``DATABASE_URL=postgres://...``); in-memory SQLite is skipped.
"""

from __future__ import annotations

import threading
from dataclasses import asdict
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch
from crowd.models import BatchPlatformState, Payment, PaymentClaim
from crowd.providers import factory
from crowd.providers.base import PaymentStatus, PublishRequest, PublishUnit
from crowd.providers.fake.provider import FakeProvider
from crowd.services.ledger import LedgerError, PaymentBusyError, payment_claim
from crowd.services.review import bonus
from tests.factories import make_assignment, make_batch, make_textbook, make_worker
from tests.threads import run_in_threads, skip_unless_threads_share_the_database


def _bonus_ready(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeProvider, Assignment]:
    """An approved assignment of a batch published on a shared ``FakeProvider`` (slow to pay)."""
    fake = FakeProvider()
    fake.pay_delay = 0.3
    monkeypatch.setitem(factory._REGISTRY, "fake", lambda config: fake)
    batch = make_batch(
        make_textbook("tb", ["Cells divide by mitosis in most tissues."]),
        kind=Batch.Kind.SCIQ_QUESTION,
        provider="fake",
        status=Batch.Status.PUBLISHED,
    )
    hit = HIT.objects.create(batch=batch, position=0)
    published = fake.publish(
        PublishRequest(
            batch_ref=str(batch.pk),
            title="t",
            description="d",
            external_url="http://testserver/hit/",
            reward_cents=10,
            units=(PublishUnit(str(hit.pk)),),
        )
    )
    BatchPlatformState.change(batch.pk, published=asdict(published))
    batch.platform_ref = published.platform_batch_id
    batch.save(update_fields=["platform_ref"])
    sub = fake.simulate_submission(published.units[0].platform_id, "W1")
    assignment = make_assignment(
        hit=hit,
        worker=make_worker("W1", platform="fake"),
        platform_ref=sub.platform_assignment_id,
        status=Assignment.Status.APPROVED,
    )
    return fake, assignment


@pytest.mark.django_db(transaction=True)
def test_bonus__concurrent_requests_same_key_pay_once(monkeypatch: pytest.MonkeyPatch) -> None:
    skip_unless_threads_share_the_database()
    fake, assignment = _bonus_ready(monkeypatch)
    barrier = threading.Barrier(2)
    results: list[str] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def pay() -> None:
        try:
            barrier.wait()
            result = bonus(assignment, 25, "Great question")
            with lock:
                results.append(result.status.value)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            with lock:
                failures.append(exc)

    run_in_threads(pay, [(), ()])
    assert not failures, failures
    assert len(fake.paid) == 1
    assert sorted(results) == [PaymentStatus.ALREADY_PAID.value, PaymentStatus.PAID.value]
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    assert not PaymentClaim.objects.exists()


@pytest.mark.django_db
def test_payment_claim__second_holder_waits_then_gives_up() -> None:
    with payment_claim("bonus-1-x"):
        with pytest.raises(PaymentBusyError, match="bonus-1-x"):
            with payment_claim("bonus-1-x", wait_seconds=0):
                pass
        assert PaymentClaim.objects.filter(idempotency_key="bonus-1-x").count() == 1
    assert not PaymentClaim.objects.exists()


@pytest.mark.django_db
def test_payment_claim__expired_claim_of_a_dead_holder_is_taken_over() -> None:
    PaymentClaim.objects.create(
        idempotency_key="bonus-2-x", owner="dead", expires_at=timezone.now() - timedelta(seconds=1)
    )
    with payment_claim("bonus-2-x", wait_seconds=0):
        assert PaymentClaim.objects.get(idempotency_key="bonus-2-x").owner != "dead"
    assert not PaymentClaim.objects.exists()


@pytest.mark.django_db
def test_payment_claim__refused_inside_a_transaction() -> None:
    from django.db import transaction

    with transaction.atomic(), pytest.raises(LedgerError, match="outside transaction.atomic"):
        with payment_claim("bonus-3-x"):
            pass


HOLDER = """
import sys, time
import django
django.setup()
from crowd.services.ledger import payment_claim
with payment_claim(sys.argv[1]):
    print("held", flush=True)
    time.sleep(300)
"""


@pytest.mark.django_db(transaction=True)
def test_payment_claim__holder_killed_on_another_host_is_taken_over_at_once() -> None:
    """PostgreSQL: a live holder on another host is respected; once it is killed its claim is taken over
    without waiting for the 10-minute lease."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.integration.conftest import database_url

    if connection.vendor != "postgresql":
        pytest.skip("session advisory locks are PostgreSQL's; the embedded SQLite default runs on one host")
    env = dict(os.environ, DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="config.settings")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, "bonus-9-x"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # The holder's row as a process on another machine would leave it: no local pid to check.
        PaymentClaim.objects.filter(idempotency_key="bonus-9-x").update(owner="other-host:4242:0123abcd")
        with pytest.raises(PaymentBusyError, match="bonus-9-x"):
            with payment_claim("bonus-9-x", wait_seconds=0):
                pass
    finally:
        holder.kill()
        holder.wait(timeout=30)
    with payment_claim("bonus-9-x", wait_seconds=10):
        claim = PaymentClaim.objects.get(idempotency_key="bonus-9-x")
        assert claim.owner != "other-host:4242:0123abcd" and claim.expires_at > timezone.now()
    assert not PaymentClaim.objects.exists()
