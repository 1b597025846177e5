"""A SciQ stage-1 batch on Prolific, end to end against the fake Prolific API.

Launch creates and publishes a study whose URL carries Prolific's placeholders; participants start on
the fake, arrive on crowdqa's HIT page, submit and are redirected to the completion URL; signed webhooks
trigger a sync (a bad signature is refused, a redelivered event dropped); approve, reject (Prolific's
100-character rule), and bonuses paid once even when retried or when the pay answer was lost.
"""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment, WebhookEvent
from crowd.providers.base import PaymentStatus
from crowd.providers.prolific.api import completion_url
from crowd.services.batch_status import change_status
from crowd.services.launching import launch
from crowd.services.review import ReviewError, approve_assignment, bonus, reject_assignment
from tests.crowd.conftest import answers_for

pytestmark = pytest.mark.django_db

SECRET = "webhook-secret"
WEBHOOK = "/crowd/webhooks/prolific/"
LONG_REASON = (
    "Your question repeats its own answer, so it cannot be used in an exam. The instructions ask for a "
    "question whose answer is not contained in the question itself."
)


@pytest.fixture
def prolific_batch(sciq_corpus, fake_prolific_server, settings, eager_celery) -> Batch:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_WEBHOOK_SECRET = SECRET
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="prolific", limit=2, reward_cents=80)
    )
    return batch


def _participate(server, study_id: str, pid: str, code: str) -> str:  # noqa: ANN001
    """Start on Prolific, do the HIT on crowdqa's page, land on the completion URL; return the session."""
    session = server.fake.start(study_id, pid)
    client = Client()
    page = client.get(server.fake.study_url_for(study_id, pid, session))["Location"]
    client.post(page + "consent/", {"consent": "yes"})
    assert "Return HIT" in client.get(page).content.decode()
    hit = Assignment.objects.get(platform_ref=session).hit
    done = client.post(page, answers_for(hit))
    assert done.status_code == 302 and done["Location"] == completion_url(code)
    server.fake.complete(session, code)
    return session


def _webhook(client: Client, server, payload: dict, secret: str = SECRET):  # noqa: ANN001, ANN202
    headers, body = server.fake.webhook(secret, payload)
    return client.post(
        WEBHOOK,
        data=body,
        content_type="application/json",
        headers={k: v for k, v in headers.items() if k != "Content-Type"},
    )


def test_prolific__study_submissions_webhooks_review_bonus(
    prolific_batch: Batch, fake_prolific_server
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    study_id = prolific_batch.platform_ref
    study = fake.studies[study_id]
    assert study["status"] == "ACTIVE" and study["total_available_places"] == 2
    assert study["external_study_url"].startswith(f"http://testserver/hit/{prolific_batch.pk}/?PROLIFIC_PID=")
    code = BatchPlatformState.of(prolific_batch.pk).completion_code
    assert code == study["completion_codes"][0]["code"] and "completion_code" not in prolific_batch.options
    s1 = _participate(fake_prolific_server, study_id, "P1", code)
    s2 = _participate(fake_prolific_server, study_id, "P2", code)

    client = Client()
    event = {
        "event_type": "submission.status.change",
        "resource_id": s1,
        "status": "AWAITING REVIEW",
        "study_id": study_id,
    }
    first = _webhook(client, fake_prolific_server, event)
    assert first.status_code == 200 and first.json() == {"ok": True, "batch": prolific_batch.pk}
    assert _webhook(client, fake_prolific_server, event).json()["duplicate"] is True
    assert (
        _webhook(client, fake_prolific_server, {**event, "resource_id": s2}, secret="wrong").status_code
        == 403
    )
    assert WebhookEvent.objects.count() == 1

    a1 = Assignment.objects.get(platform_ref=s1)
    a2 = Assignment.objects.get(platform_ref=s2)
    assert a1.status == a2.status == "submitted"
    approve_assignment(a1)
    assert fake.submissions[s1]["status"] == "APPROVED"
    assert Payment.objects.get(assignment=a1, kind="reward").status == Payment.Status.CONFIRMED
    with pytest.raises(ReviewError, match="100"):
        reject_assignment(a2, "Too short.")
    assert fake.submissions[s2]["status"] == "AWAITING REVIEW"
    reject_assignment(a2, LONG_REASON, "LOW_EFFORT")
    assert fake.submissions[s2]["status"] == "REJECTED"

    assert bonus(a1, 30, "Great question").status == PaymentStatus.PAID
    assert bonus(a1, 30, "Great question").status == PaymentStatus.ALREADY_PAID
    assert len(fake.payments) == 1

    fake.drop_after_processing.add("pay")  # Prolific pays, but the answer is lost
    # Settled at once from the submission's record (its bonus_payments list it), never sent again.
    assert bonus(a1, 20, "Second bonus").status == PaymentStatus.PAID
    assert bonus(a1, 20, "Second bonus").status == PaymentStatus.ALREADY_PAID
    assert len(fake.payments) == 2
    assert (
        Payment.objects.get(idempotency_key=f"bonus-{a1.pk}-second-bonus").status == Payment.Status.CONFIRMED
    )


def test_prolific__pause_and_resume_the_study(prolific_batch: Batch, fake_prolific_server) -> None:  # noqa: ANN001
    study = fake_prolific_server.fake.studies[prolific_batch.platform_ref]
    change_status(prolific_batch, "pause")
    assert study["status"] == "PAUSED" and not BatchPlatformState.of(prolific_batch.pk).stopped_for_good
    change_status(prolific_batch, "resume")
    prolific_batch.refresh_from_db()
    assert study["status"] == "ACTIVE" and prolific_batch.status == Batch.Status.PUBLISHED


@pytest.mark.django_db
def test_webhook__a_platform_that_sends_none_here_or_no_platform_answers_404(settings) -> None:  # noqa: ANN001
    settings.PROLIFIC_WEBHOOK_SECRET = SECRET
    client = Client()
    for platform in ("mturk", "local", "nowhere"):
        answer = client.post(f"/crowd/webhooks/{platform}/", b"{}", content_type="application/json")
        assert answer.status_code == 404, platform
