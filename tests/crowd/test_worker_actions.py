"""Researcher actions on workers and payments, from the command line and the pages, against fake MTurk.

manage_workers blocks, unblocks and messages; the batch page messages a batch's workers; the assignment
page settles a bonus whose answer was lost against MTurk's record. Each page action needs its
researcher permission.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import Payment, Worker
from crowd.services.launching import launch
from crowd.services.review import approve_assignment, bonus
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(sciq_corpus, fake_mturk_server, settings) -> Assignment:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=1, assignments=1, reward_cents=50
        )
    )
    hit = batch.hits.get()
    fake_mturk_server.fake.submit(hit.platform_ref, "W1", answers_for(hit))
    sync_batch(batch)
    return Assignment.objects.get(hit=hit)


def test_manage_workers__block_unblock_and_notify(submitted: Assignment, fake_mturk_server) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    worker = submitted.worker
    call_command(
        "manage_workers", block=True, worker=[worker.pseudonym], reason="copied answers", stdout=StringIO()
    )
    assert fake.blocks == {"W1": "copied answers"} and Worker.objects.get(pk=worker.pk).blocked
    with pytest.raises(CommandError, match="needs --reason"):
        call_command("manage_workers", block=True, worker=["W1"], stdout=StringIO())
    call_command("manage_workers", unblock=True, worker=["W1"], platform="mturk", stdout=StringIO())
    assert fake.blocks == {} and not Worker.objects.get(pk=worker.pk).blocked
    out = StringIO()
    batch = submitted.hit.batch
    call_command(
        "manage_workers", notify=True, batch=batch.pk, subject="Thanks", message="Bonus soon.", stdout=out
    )
    assert "1 worker(s) messaged" in out.getvalue()
    assert fake.notifications[-1]["WorkerIds"] == ["W1"] and fake.notifications[-1]["Subject"] == "Thanks"
    with pytest.raises(CommandError, match="no worker"):
        call_command("manage_workers", block=True, worker=["nobody"], reason="x", stdout=StringIO())


def _client_with(client, *permissions: str):  # noqa: ANN001, ANN002, ANN202
    from django.contrib.auth.models import Permission

    name = f"r{get_user_model().objects.count()}"
    user = get_user_model().objects.create_user(name, password="pw-for-tests")
    for perm in ("annotation.view_batch", *permissions):
        app, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app, codename=codename))
    client.force_login(user)
    return client


def test_batch_page__notify_needs_its_permission(submitted: Assignment, fake_mturk_server, client) -> None:  # noqa: ANN001
    batch: Batch = submitted.hit.batch
    url = f"/batches/{batch.pk}/message/"
    viewer = _client_with(client)
    assert viewer.post(url, {"subject": "Hi", "message": "Hello"}).status_code == 403
    assert fake_mturk_server.fake.notifications == []
    client.logout()
    notifier = _client_with(client, "crowd.view_worker")
    assert f'action="/batches/{batch.pk}/message/"' in notifier.get(f"/batches/{batch.pk}/").content.decode()
    notifier.post(url, {"to": "all", "subject": "Hi", "message": "Hello"})
    assert fake_mturk_server.fake.notifications[-1]["WorkerIds"] == ["W1"]


def test_assignment_page__unconfirmed_bonus_settled_from_mturks_record(
    submitted: Assignment, fake_mturk_server, client
) -> None:  # noqa: ANN001
    from datetime import timedelta

    from django.utils import timezone

    approve_assignment(submitted)
    bonus(submitted, 30, "Clear")
    # The PAID write was lost and the token is past its 24 hours: unknown until MTurk's record settles it.
    Payment.objects.filter(kind="bonus").update(status="sent", sent_at=timezone.now() - timedelta(days=2))
    row = Payment.objects.get(kind="bonus")
    payer = _client_with(client, "crowd.add_payment")
    page = payer.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "payment unknown" in page and "Check MTurk" in page
    payer.post(f"/crowd/payments/{row.pk}/resolve/")
    row.refresh_from_db()
    assert row.status == "confirmed" and len(fake_mturk_server.fake.bonuses) == 1
