"""Work under an MTurk assignment id MTurk does not know is never approved or paid; the researcher sees why.

MTurk cannot confirm an assignment while it is worked on, so anyone with a worker id and the public HIT
id can open the HIT under a made-up ``assignmentId`` and submit on crowdqa. Before approving or paying,
crowdqa asks MTurk (GetAssignment) whether it knows the id, for the same worker and the same HIT.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.services.batches import BatchSpec
from crowd.models import Payment
from crowd.services.launching import launch
from crowd.services.review import PLATFORM_CHECK, ReviewError, approve_assignment, bonus, reject_assignment
from tests.crowd.conftest import answers_for
from tests.factories import make_researcher, make_textbook
from tests.fakes import fixtures

aws_credentials = fixtures.aws_credentials
fake_mturk_server = fixtures.fake_mturk_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch(fake_mturk_server: Any, settings: Any) -> Any:
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    make_textbook(
        "sci", [f"Mitochondria produce energy in cells, part {n}. Scientists study them." for n in range(6)]
    )
    made, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=2, assignments=2, reward_cents=50
        )
    )
    return made


def _work(batch: Any, hit: Any, assignment_id: str, worker_id: str) -> Assignment:
    client = Client()
    query = {"assignmentId": assignment_id, "hitId": hit.platform_ref, "workerId": worker_id}
    arrival = client.get(f"/hit/{batch.pk}/", {**query, "turkSubmitTo": "https://www.mturk.com"})
    assert arrival.status_code == 302, arrival.content[:300]
    page = arrival["Location"]
    client.post(page + "consent/", {"consent": "yes"})
    assert client.post(page, answers_for(hit)).status_code == 200
    return Assignment.objects.get(platform_ref=assignment_id)


def test_made_up_assignment_id__never_approved_or_paid(batch: Any, fake_mturk_server: Any) -> None:
    fake = fake_mturk_server.fake
    hit = batch.hits.order_by("position").first()
    forged = _work(batch, hit, "MADEUPASSIGNMENT0000000000001", "VICTIMWORKER")
    assert forged.status == Assignment.Status.SUBMITTED
    with pytest.raises(ReviewError, match="has no assignment"):
        approve_assignment(forged)
    with pytest.raises(ReviewError, match="has no assignment"):
        bonus(forged, 25, "Clear question")
    assert "ApproveAssignment" not in fake.calls and "SendBonus" not in fake.calls
    forged.refresh_from_db()
    assert forged.status == Assignment.Status.SUBMITTED
    assert "has no assignment" in forged.platform_meta[PLATFORM_CHECK]
    assert not Payment.objects.filter(assignment=forged).exists()
    reject_assignment(forged, "This assignment id was not issued by MTurk.")
    forged.refresh_from_db()
    assert forged.status == Assignment.Status.REJECTED  # rejected here; MTurk has nothing to reject


def test_an_id_of_another_hit_or_worker__never_approved(batch: Any, fake_mturk_server: Any) -> None:
    fake = fake_mturk_server.fake
    first, second = batch.hits.order_by("position")
    real_other_hit = fake.accept(second.platform_ref, "WORKER1")
    real_other_worker = fake.accept(first.platform_ref, "SOMEONE")
    for ref in (real_other_hit, real_other_worker):
        fake.assignments[ref]["_state"] = "Submitted"
    on_first = _work(batch, first, "FORGED0000000000000000000000A", "WORKER1")
    Assignment.objects.filter(pk=on_first.pk).update(platform_ref=real_other_hit)
    with pytest.raises(ReviewError, match="another HIT"):
        approve_assignment(on_first)
    Assignment.objects.filter(pk=on_first.pk).update(platform_ref=real_other_worker)
    with pytest.raises(ReviewError, match="another worker"):
        approve_assignment(on_first)
    assert "ApproveAssignment" not in fake.calls


def test_genuine_assignment__checked_then_approved_and_the_page_says_why_not(
    batch: Any, fake_mturk_server: Any
) -> None:
    fake = fake_mturk_server.fake
    hit = batch.hits.order_by("position").first()
    real_id = fake.accept(hit.platform_ref, "GENUINE")
    genuine = _work(batch, hit, real_id, "GENUINE")
    fake.assignments[real_id]["_state"] = "Submitted"
    other_hit = batch.hits.order_by("position").last()
    forged = _work(batch, other_hit, "MADEUPASSIGNMENT0000000000002", "OTHERVICTIM")
    researcher = Client()
    researcher.force_login(make_researcher("rev", is_superuser=True))
    response = researcher.post(
        "/review/decide/", {"action": "approve", "assignment": [genuine.pk, forged.pk]}, follow=True
    )
    text = response.content.decode()
    assert "has no assignment MADEUPASSIGNMENT0000000000002" in text
    genuine.refresh_from_db()
    forged.refresh_from_db()
    assert genuine.status == Assignment.Status.APPROVED and forged.status == Assignment.Status.SUBMITTED
    assert fake.assignments[real_id]["AssignmentStatus"] == "Approved"
