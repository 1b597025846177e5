"""Money settles under faults: a bonus is paid once or shown unknown, and unknown ones settle from the record.

Against the fake MTurk and Prolific servers with injected faults: a pay request answered 429 is retried, a
5xx or a lost answer leaves the payment unknown (never reported paid, never paid twice) until the
platform's own record settles it, and one the record shows unpaid is sent again, once.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment, Worker
from crowd.providers.base import PaymentStatus
from crowd.services.launching import launch
from crowd.services.review import ReviewError, approve_assignment, bonus
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for
from tests.factories import make_textbook
from tests.fakes.faults import Faults

pytestmark = pytest.mark.django_db


@pytest.fixture
def prolific(fake_prolific_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_RETRIES = 3
    make_textbook(
        "pay", (f"Subject {i} is studied by scientists in many countries every year." for i in range(60))
    )
    return fake_prolific_server


def _approved(server: Any, n: int) -> tuple[Batch, list[Assignment]]:
    """A Prolific batch of ``n`` HITs, each done and approved by its own participant."""
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="pay", provider="prolific", limit=n, reward_cents=50)
    )
    done = []
    for i, hit in enumerate(batch.hits.order_by("pk")):
        sub = server.fake.start(batch.platform_ref, f"P{i}")
        assignment = Assignment.objects.create(
            hit=hit, worker=Worker.objects.get_or_create_for("prolific", f"P{i}"), platform_ref=sub
        )
        assignment.submit(answers_for(hit))
        server.fake.complete(sub, BatchPlatformState.of(batch.pk).completion_code)
        approve_assignment(assignment)
        done.append(assignment)
    return batch, done


def _paid(server: Any, participant: str) -> int:
    return sum(1 for p in server.fake.payments if p["participant_id"] == participant)


def test_prolific_bonus_throttled__retried_and_paid_once(prolific) -> None:  # noqa: ANN001
    _, (assignment,) = _approved(prolific, 1)
    prolific.fake.faults.script("pay_bonus", ["throttle", "throttle"])
    assert bonus(assignment, 40, "Thorough").status == PaymentStatus.PAID
    assert _paid(prolific, "P0") == 1 and Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED


def test_prolific_bonus_reply_lost__settled_paid_from_the_submission_record(prolific) -> None:  # noqa: ANN001
    _, (assignment,) = _approved(prolific, 1)
    prolific.fake.faults.script("pay_bonus", ["lost_reply"])
    assert bonus(assignment, 40, "Thorough").status == PaymentStatus.PAID
    assert _paid(prolific, "P0") == 1 and Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED


def test_prolific_bonus_refused_with_503__unknown_then_resent_once(prolific, settings) -> None:  # noqa: ANN001
    _, (assignment,) = _approved(prolific, 1)
    prolific.fake.faults.script("pay_bonus", ["server_error"])
    with pytest.raises(ReviewError, match="payment UNKNOWN"):
        bonus(assignment, 40, "Thorough")
    row = Payment.objects.get(kind="bonus")
    assert row.status == Payment.Status.SENT and _paid(prolific, "P0") == 0  # unknown, never "paid"
    out = StringIO()
    call_command("resolve_payments", stdout=out)  # within the settling time: still unknown, not resent
    assert "unknown" in out.getvalue() and _paid(prolific, "P0") == 0
    settings.CROWDQA_PAYMENT_SETTLE_SECONDS = 0
    call_command("resolve_payments", stdout=out)
    row.refresh_from_db()
    assert json.loads(out.getvalue().splitlines()[-1])["resolved"][0]["status"] == "resent: paid"
    assert row.status == Payment.Status.CONFIRMED and _paid(prolific, "P0") == 1
    assert (
        bonus(assignment, 40, "Thorough").status == PaymentStatus.ALREADY_PAID and _paid(prolific, "P0") == 1
    )


def test_prolific_approval_throttled__retried(prolific) -> None:  # noqa: ANN001
    prolific.fake.faults.script("transition_submission", ["throttle", "server_error"])
    _, (assignment,) = _approved(prolific, 1)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.APPROVED
    assert prolific.fake.submissions[assignment.platform_ref]["status"] == "APPROVED"


def test_prolific_bonuses_under_faults__each_paid_once_none_sent_while_unpaid(prolific, settings) -> None:  # noqa: ANN001
    _, assignments = _approved(prolific, 20)
    faults = prolific.fake.faults = Faults(seed=11).set(
        "*", throttle=0.15, server_error=0.10, lost_reply=0.10, reset=0.05
    )
    for assignment in assignments:
        try:
            bonus(assignment, 25, "Careful work")
        except ReviewError as exc:
            assert "UNKNOWN" in str(exc) or "nothing was paid" in str(exc)
    settings.CROWDQA_PAYMENT_SETTLE_SECONDS = 0
    injected = faults.total()
    faults.clear()
    call_command("resolve_payments", stdout=StringIO())
    for assignment in assignments:  # bonuses refused before any record was made are paid on a re-run
        bonus(assignment, 25, "Careful work")
    rows = Payment.objects.filter(kind="bonus")
    assert rows.count() == 20 and set(rows.values_list("status", flat=True)) == {Payment.Status.CONFIRMED}
    assert all(_paid(prolific, f"P{i}") == 1 for i in range(20))
    assert injected > 0


def test_prolific_bonus_set_up_answer_lost__counted_shown_and_never_paid(prolific, client) -> None:  # noqa: ANN001
    """The API can neither list nor cancel a bulk bonus: the orphan is recorded and named, never paid."""
    from tests.factories import make_researcher

    _, (assignment,) = _approved(prolific, 1)
    prolific.fake.faults.script("set_up_bonus", ["lost_reply"])
    with pytest.raises(ReviewError, match="nothing was paid: try again"):
        bonus(assignment, 40, "Thorough")
    row = Payment.objects.get(kind="bonus")
    assert row.setups_in_doubt == 1 and row.status == Payment.Status.PENDING and not row.platform_ref
    assert len(prolific.fake.bulk_bonuses) == 1  # the orphan exists on the platform

    assert bonus(assignment, 40, "Thorough").status == PaymentStatus.PAID
    row.refresh_from_db()
    assert row.status == Payment.Status.CONFIRMED and row.setups_in_doubt == 1
    assert len(prolific.fake.bulk_bonuses) == 2 and _paid(prolific, "P0") == 1  # the orphan is never paid
    orphan = next(b for b in prolific.fake.bulk_bonuses if b != row.platform_ref)
    client.force_login(make_researcher("orphans"))
    html = client.get(f"/assignments/{assignment.pk}/").content.decode()
    assert f'id="setups-in-doubt-{row.pk}"' in html and "1 bonus set-up got no answer" in html
    assert orphan not in html and row.platform_ref in html


def test_prolific_bonus_set_up_refused__failed_with_nothing_in_doubt(prolific) -> None:  # noqa: ANN001
    from tests.fakes.fake_prolific_server import FakeProlificError

    _, (assignment,) = _approved(prolific, 1)
    prolific.fake.fail_next["set_up_bonus"] = FakeProlificError(400, "participant not in study")
    with pytest.raises(ReviewError, match="participant not in study"):
        bonus(assignment, 40, "Thorough")
    row = Payment.objects.get(kind="bonus")
    assert row.status == Payment.Status.FAILED and row.setups_in_doubt == 0
    assert bonus(assignment, 40, "Thorough").status == PaymentStatus.PAID
    assert _paid(prolific, "P0") == 1


@pytest.fixture
def mturk(sciq_corpus, fake_mturk_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    return fake_mturk_server


def test_mturk_first_bonus_reply_lost__reported_paid_not_already_paid(mturk) -> None:  # noqa: ANN001
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="mturk", limit=1, reward_cents=50)
    )
    hit = batch.hits.get()
    mturk.fake.submit(hit.platform_ref, "W1", answers_for(hit))
    sync_batch(batch)
    assignment = Assignment.objects.get(hit=hit)
    approve_assignment(assignment)
    mturk.fake.faults.script("SendBonus", ["lost_reply"])  # paid, the answer lost, botocore retries
    assert bonus(assignment, 25, "Clear question").status == PaymentStatus.PAID
    assert len(mturk.fake.bonuses) == 1
    assert bonus(assignment, 25, "Clear question").status == PaymentStatus.ALREADY_PAID
