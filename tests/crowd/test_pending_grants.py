"""Screening qualifications the platform refused once are kept pending and granted by the next sync.

Approving a screening submission grants the screening batch's MTurk qualification / Prolific allow-list
group. The fake platform fails that call once: the approval still stands, the grant is recorded as
pending with the platform's message, and ``sync_batch`` (then the periodic job) sends it again until it
is accepted, and never again after that.
"""

from __future__ import annotations

import pytest

from annotation.models import Assignment
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Qualification
from crowd.services.launching import launch
from crowd.services.review import approve_assignment
from crowd.services.sync import sync_batch
from crowd.tasks import sync_batches
from tests.factories import make_corpus, make_document, make_worker
from tests.fakes.fake_mturk_server import FakeMTurkError
from tests.fakes.fake_prolific_server import FakeProlificError

pytestmark = pytest.mark.django_db


@pytest.fixture
def syllabus_corpus() -> None:
    make_document(make_corpus(name="syl"), name="bio101")


def test_screening_grant_on_mturk__failed_once_then_granted_by_sync(
    syllabus_corpus, fake_mturk_server, settings
) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    fake = fake_mturk_server.fake
    batch, _ = launch(BatchSpec(kind="screening", corpus="syl", provider="mturk", reward_cents=100))
    qualification_type = BatchPlatformState.of(batch.pk).screening_qualification
    assert qualification_type in fake.qualification_types
    assignment_id = fake.submit(batch.hits.get().platform_ref, "WORKER1", {"qa-0-question": "Who teaches?"})
    sync_batch(batch)
    assignment = Assignment.objects.get(platform_ref=assignment_id)

    fake.fail_next["AssociateQualificationWithWorker"] = FakeMTurkError("Service is busy, try again later.")
    approve_assignment(assignment)  # the approval stands although the grant failed
    assert fake.assignments[assignment_id]["AssignmentStatus"] == "Approved"
    grant = Qualification.objects.get(worker__platform_id="WORKER1")
    assert not grant.platform_synced and grant.platform_attempts == 1 and "busy" in grant.platform_error
    assert grant.platform_qualification_id == qualification_type and grant.batch_id == batch.pk
    assert (qualification_type, "WORKER1") not in fake.grants

    counts = sync_batch(batch)
    grant.refresh_from_db()
    assert counts["grants_synced"] == 1 and grant.platform_synced and grant.platform_error == ""
    assert fake.grants[(qualification_type, "WORKER1")] == 1
    assert sync_batch(batch)["grants_synced"] == 0
    assert fake.calls.count("AssociateQualificationWithWorker") == 2


def test_screening_grant_on_prolific__failed_once_then_granted_by_the_periodic_job(
    syllabus_corpus, fake_prolific_server, settings
) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_RETRIES = 0  # the 503 below outlasts the client's retries
    fake = fake_prolific_server.fake
    batch, _ = launch(BatchSpec(kind="screening", corpus="syl", provider="prolific", reward_cents=100))
    group = BatchPlatformState.of(batch.pk).screening_qualification
    session = fake.start(batch.platform_ref, "P1")
    fake.complete(session, BatchPlatformState.of(batch.pk).completion_code)
    assignment = Assignment.objects.create(
        hit=batch.hits.get(),
        worker=make_worker("P1", platform="prolific"),
        platform_ref=session,
        status=Assignment.Status.SUBMITTED,
    )
    batch.cancel()  # sync no longer visits it, but its grants are still retried by the periodic job

    fake.fail_next["add_to_group"] = FakeProlificError(503, "temporarily unavailable")
    approve_assignment(assignment)
    assert fake.submissions[session]["status"] == "APPROVED"
    grant = Qualification.objects.get(worker__platform_id="P1")
    assert not grant.platform_synced and "unavailable" in grant.platform_error
    assert "P1" not in fake.groups[group]["participants"]

    result = sync_batches()
    grant.refresh_from_db()
    assert grant.platform_synced and fake.groups[group]["participants"] == ["P1"]
    assert result["grants"] == {"grants_synced": 1, "grants_pending": 0}
    assert batch.pk not in [r["batch"] for r in result["batches"]]
    sync_batches()
    assert sum(c == f"POST participant-groups/{group}/participants/" for c in fake.calls) == 2


def test_qualify_worker__local_screening_needs_no_platform(syllabus_corpus) -> None:  # noqa: ANN001
    from crowd.services.qualifications import qualify_worker

    batch, _ = launch(BatchSpec(kind="screening", corpus="syl", provider="local"))
    grant = qualify_worker(make_worker("lab1"), batch)
    assert grant.platform_synced and grant.platform_qualification_id == ""
    assert not Qualification.objects.pending_on_platform().exists()
