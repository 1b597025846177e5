"""A SciQ stage-1 batch on MTurk, end to end against the fake MTurk server (boto3 pointed at it).

Launch publishes a HIT type and ExternalQuestion HITs at PUBLIC_BASE_URL; workers accept on the fake,
open the worker URL on crowdqa's HIT page (Django test client), consent, submit, and their browser
posts to externalSubmit; one worker's submission reaches only MTurk (a crash lost it); sync restores
it; approve, reject, bonus (retried, and retried after a simulated crash) and MTurk's auto-approval.
"""

from __future__ import annotations

import re
import urllib.parse
import urllib.request

import pytest
from django.test import Client

from annotation.models import Assignment, Batch, QAPair
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment
from crowd.providers.base import PaymentStatus
from crowd.services.batch_status import change_status
from crowd.services.launching import launch
from crowd.services.lifecycle import LifecycleError
from crowd.services.publishing import publish
from crowd.services.review import approve_assignment, bonus, reject_assignment
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def mturk_batch(sciq_corpus, fake_mturk_server, settings) -> Batch:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=2, assignments=2, reward_cents=50
        )
    )
    return batch


def _work_on_page(client: Client, server, hit_id: str, worker_id: str, fields: dict) -> str:  # noqa: ANN001
    """Accept on MTurk, do the HIT on crowdqa's page, and let the browser post to externalSubmit."""
    assignment_id = server.fake.accept(hit_id, worker_id)
    url = server.fake.worker_url(hit_id, assignment_id, worker_id)
    assert url.startswith("http://testserver/hit/")
    arrival = client.get(url)
    assert arrival.status_code == 302, arrival.content[:300]
    page = arrival["Location"]
    assert "consent" in client.get(page).content.decode().lower()
    assert client.post(page + "consent/", {"consent": "yes"}).status_code == 302
    assert "Return HIT" not in client.get(page).content.decode()  # MTurk workers return it on MTurk
    done = client.post(page, fields)
    assert done.status_code == 200, done.content[:500]
    html = done.content.decode()
    action = re.search(r'action="([^"]+)"', html).group(1)
    assert action == f"{server.url}/mturk/externalSubmit"
    form = re.findall(r'name="([^"]+)" value="([^"]*)"', html)
    with urllib.request.urlopen(action, data=urllib.parse.urlencode(form).encode(), timeout=10) as response:
        assert response.status == 200
    return assignment_id


def test_mturk__publish_submit_sync_review_bonus(mturk_batch: Batch, fake_mturk_server) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    hits = list(mturk_batch.hits.order_by("position"))
    assert len(fake.hit_types) == 1 and len(fake.hits) == 2
    assert {h.platform_ref for h in hits} == set(fake.hits)
    assert all(f"http://testserver/hit/{mturk_batch.pk}/" in h["Question"] for h in fake.hits.values())
    publish(mturk_batch)  # a retried launch publishes nothing twice
    assert len(fake.hits) == 2

    client = Client()
    a1 = _work_on_page(client, fake_mturk_server, hits[0].platform_ref, "WORKER1", answers_for(hits[0]))
    a2 = _work_on_page(Client(), fake_mturk_server, hits[1].platform_ref, "WORKER2", answers_for(hits[1]))
    # WORKER3's submission reaches MTurk, but our server died before storing it.
    other = hits[0].passages.order_by("pk")[1]
    subject = other.text.split(" ", 1)[0]
    a3 = fake_mturk_server.fake.submit(
        hits[0].platform_ref,
        "WORKER3",
        {
            "passage": str(other.pk),
            "question": f"Which things {other.text.split(' ', 1)[1].split('.')[0]}?",
            "answer": subject.lower(),
        },
    )
    assert not Assignment.objects.filter(platform_ref=a3).exists()

    counts = sync_batch(mturk_batch)
    assert counts["restored"] == 1 and counts["changed"] == 0 and counts["unchanged"] == 2
    restored = Assignment.objects.get(platform_ref=a3)
    assert restored.status == "submitted" and restored.platform_meta["restored"] is True
    assert restored.answers["answer"] == subject.lower()
    assert QAPair.objects.filter(assignment=restored).count() == 1
    assert sync_batch(mturk_batch)["restored"] == 0  # idempotent

    first = Assignment.objects.get(platform_ref=a1)
    assert (
        first.status == "submitted"
        and first.qa_pairs.count() == 1
        and not first.platform_meta.get("restored")
    )
    approve_assignment(first)
    approve_assignment(first)
    assert fake.assignments[a1]["AssignmentStatus"] == "Approved"
    reward = Payment.objects.get(assignment=first, kind="reward")
    assert reward.status == Payment.Status.CONFIRMED and reward.amount_cents == 50

    second = Assignment.objects.get(platform_ref=a2)
    reject_assignment(second, "The answer is not supported by the passage you chose.")
    assert fake.assignments[a2]["AssignmentStatus"] == "Rejected"

    assert bonus(first, 25, "Clear question").status == PaymentStatus.PAID
    assert bonus(first, 25, "Clear question").status == PaymentStatus.ALREADY_PAID
    # A crash after MTurk paid but before the ledger said so: the row still says "sent".
    Payment.objects.filter(kind="bonus").update(status=Payment.Status.SENT)
    assert bonus(first, 25, "Clear question").status == PaymentStatus.ALREADY_PAID
    assert len(fake.bonuses) == 1 and Payment.objects.filter(kind="bonus").count() == 1

    fake.assignments[a3]["AssignmentStatus"] = "Approved"  # MTurk's auto-approval
    counts = sync_batch(mturk_batch)
    restored.refresh_from_db()
    assert counts["changed"] == 1 and restored.status == "approved"
    assert Payment.objects.filter(kind="reward").count() == 2
    assert Payment.objects.get(assignment=restored, kind="reward").status == Payment.Status.CONFIRMED


def test_mturk__pause_expires_the_hits_and_refuses_resume(mturk_batch: Batch, fake_mturk_server) -> None:  # noqa: ANN001
    import time

    change_status(mturk_batch, "pause")
    mturk_batch.refresh_from_db()
    assert (
        mturk_batch.status == Batch.Status.PAUSED and BatchPlatformState.of(mturk_batch.pk).stopped_for_good
    )
    assert all(hit["Expiration"] <= time.time() for hit in fake_mturk_server.fake.hits.values())
    with pytest.raises(LifecycleError, match="cannot be listed again"):
        change_status(mturk_batch, "resume")
