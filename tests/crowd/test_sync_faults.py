"""Sync resolves every difference with the platform and says why; failures are loud, lost batches flagged.

Against the fake MTurk and Prolific servers: MTurk lists only submitted work, so returned or abandoned
assignments are settled by their time limit; a screening assignment auto-approved by MTurk grants the
qualification; a batch whose HITs or study are gone is marked needing attention; sync_batches exits
non-zero when a batch failed and retries transient failures with backoff.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd import tasks
from crowd.models import BatchPlatformState, Qualification, Worker
from crowd.services.launching import launch
from crowd.services.review import ReviewError, approve_assignment
from crowd.services.sync import TransientSyncError, sync_batch
from tests.crowd.conftest import answers_for
from tests.factories import make_corpus, make_document
from tests.fakes.fake_mturk_server import FakeMTurkError

pytestmark = pytest.mark.django_db


@pytest.fixture
def mturk_batch(sciq_corpus, fake_mturk_server, settings) -> Batch:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=2, assignments=1, reward_cents=50
        )
    )
    return batch


def _local(batch: Batch, hit_index: int, worker: str, platform_ref: str, **fields) -> Assignment:  # noqa: ANN003
    hit = list(batch.hits.order_by("position"))[hit_index]
    return Assignment.objects.create(
        hit=hit, worker=Worker.objects.get_or_create_for("mturk", worker), platform_ref=platform_ref, **fields
    )


def test_sync__abandoned_and_never_received_work_is_resolved_with_a_reason(
    mturk_batch: Batch, fake_mturk_server
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    hits = list(mturk_batch.hits.order_by("position"))
    gone = fake.accept(hits[0].platform_ref, "W1")  # accepted, then returned / abandoned on MTurk
    late = fake.accept(hits[1].platform_ref, "W2")  # submitted here, deadline passed before MTurk heard
    past = timezone.now() - timedelta(minutes=5)
    abandoned = _local(mturk_batch, 0, "W1", gone, expires_at=past)
    submitted = _local(mturk_batch, 1, "W2", late, expires_at=past + timedelta(minutes=1))
    submitted.submit(answers_for(hits[1]))

    counts = sync_batch(mturk_batch)
    abandoned.refresh_from_db()
    submitted.refresh_from_db()
    assert counts["missing"] == 2 and counts["expired"] == 1 and counts["missing_flagged"] == 1
    assert (
        abandoned.status == "expired"
        and "abandoned or returned on mturk" in abandoned.platform_meta["sync_reason"]
    )
    assert submitted.status == "submitted" and submitted.platform_meta["missing_on_platform"] is True
    assert "cannot be approved on the platform" in submitted.platform_meta["sync_reason"]
    with pytest.raises(ReviewError, match="no submission on mturk"):
        approve_assignment(submitted)
    again = sync_batch(mturk_batch)
    assert again["expired"] == 0 and again["missing_flagged"] == 0  # settled once
    assert again["missing"] == 0 and again["missing_known"] == 2  # not reported again as new


def test_sync__screening_auto_approved_by_mturk_grants_the_qualification(fake_mturk_server, settings) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    make_document(make_corpus(name="syl"), name="bio101")
    fake = fake_mturk_server.fake
    batch, _ = launch(BatchSpec(kind="screening", corpus="syl", provider="mturk", reward_cents=100))
    qualification = BatchPlatformState.of(batch.pk).screening_qualification
    assignment_id = fake.submit(batch.hits.get().platform_ref, "W1", {"qa-0-question": "Who teaches?"})
    sync_batch(batch)
    fake.assignments[assignment_id]["AssignmentStatus"] = "Approved"  # MTurk's auto-approval
    counts = sync_batch(batch)
    assignment = Assignment.objects.get(platform_ref=assignment_id)
    assert counts["changed"] == 1 and assignment.status == "approved"
    assert assignment.platform_meta["sync_reason"] == "Approved on mturk"
    assert fake.grants[(qualification, "W1")] == 1
    assert Qualification.objects.get(worker__platform_id="W1").platform_synced


def test_sync__deleted_hits_mark_the_batch_needing_attention_not_failing_row_by_row(
    mturk_batch: Batch, fake_mturk_server
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    hit = mturk_batch.hits.order_by("position").first()
    assignment_id = fake.submit(hit.platform_ref, "W1", answers_for(hit))
    sync_batch(mturk_batch)
    fake.hits.clear()  # the platform lost the batch's HITs
    counts = sync_batch(mturk_batch)
    mturk_batch.refresh_from_db()
    assert "no longer knows this batch" in counts["needs_attention"]
    assert BatchPlatformState.of(mturk_batch.pk).attention_reason == counts["needs_attention"]
    from django.contrib.auth import get_user_model
    from django.test import Client

    viewer = Client()
    viewer.force_login(get_user_model().objects.create_user("r", password="pw-for-tests", is_superuser=True))
    assert "Needs attention:" in viewer.get(f"/batches/{mturk_batch.pk}/").content.decode()
    before = list(fake.calls)
    with pytest.raises(ReviewError, match="needs attention"):
        approve_assignment(Assignment.objects.get(platform_ref=assignment_id))
    assert fake.calls == before  # refused before calling the platform


def test_sync__unknown_prolific_study_needs_attention_instead_of_missing(
    sciq_corpus, fake_prolific_server, settings
) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="prolific", limit=2, reward_cents=50)
    )
    sub = fake_prolific_server.fake.start(batch.platform_ref, "P1")
    _local_prolific = Assignment.objects.create(
        hit=batch.hits.first(), worker=Worker.objects.get_or_create_for("prolific", "P1"), platform_ref=sub
    )
    fake_prolific_server.fake.studies.clear()
    counts = sync_batch(batch)
    assert counts["missing"] == 0 and "no longer knows this batch" in counts["needs_attention"]
    assert _local_prolific.status == "accepted"


def test_sync_batches__exits_non_zero_when_a_batch_failed(mturk_batch: Batch, fake_mturk_server) -> None:  # noqa: ANN001
    fake_mturk_server.fake.fail_next["ListAssignmentsForHIT"] = FakeMTurkError("Your request is invalid.")
    with pytest.raises(CommandError, match="1 batch\\(es\\) failed to sync"):
        call_command("sync_batches", batch=mturk_batch.pk, sync=True)
    call_command("sync_batches", batch=mturk_batch.pk, sync=True)  # fine again


def test_sync_batches__exits_non_zero_and_lists_a_batch_needing_attention(
    mturk_batch: Batch, fake_mturk_server, capsys
) -> None:  # noqa: ANN001
    fake_mturk_server.fake.hits.clear()  # the platform lost the batch's HITs
    with pytest.raises(CommandError, match="1 batch\\(es\\) need attention") as raised:
        call_command("sync_batches", batch=mturk_batch.pk, sync=True)
    assert f"Batch({mturk_batch.pk})" in str(raised.value) and "open each batch's page" in str(raised.value)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["failed"] == []
    reason = BatchPlatformState.of(mturk_batch.pk).attention_reason
    assert summary["needs_attention"] == [{"batch": mturk_batch.pk, "reason": reason}]


def test_sync_batches__transient_failure_retried_with_backoff(mturk_batch: Batch, monkeypatch) -> None:  # noqa: ANN001
    calls: list[int] = []
    real = tasks.sync_batch

    def flaky(batch):  # noqa: ANN001, ANN202
        calls.append(batch.pk)
        if len(calls) < 3:
            raise TransientSyncError("throttled")
        return real(batch)

    sleeps: list[float] = []
    monkeypatch.setattr(tasks, "sync_batch", flaky)
    monkeypatch.setattr(tasks.time, "sleep", sleeps.append)
    result = tasks.sync_batches(mturk_batch.pk)
    assert result["failed"] == [] and len(calls) == 3 and sleeps == [1.0, 2.0]


def test_sync_batch_task__webhook_queued_sync_retries_transient_failures(
    mturk_batch: Batch, monkeypatch
) -> None:  # noqa: ANN001
    calls: list[int] = []
    real = tasks.sync_batch

    def flaky(batch):  # noqa: ANN001, ANN202
        calls.append(batch.pk)
        if len(calls) < 3:
            raise TransientSyncError("Service is busy")
        return real(batch)

    monkeypatch.setattr(tasks, "sync_batch", flaky)
    result = tasks.sync_batch_task.apply(args=[mturk_batch.pk])
    assert result.successful() and len(calls) == 3 and result.result["batch"] == mturk_batch.pk


def test_sync__incremental_a_hit_whose_every_slot_is_decided_is_not_listed_again(
    mturk_batch: Batch, fake_mturk_server
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    first, second = mturk_batch.hits.order_by("position")
    fake.submit(first.platform_ref, "W1", answers_for(first))
    fake.submit(second.platform_ref, "W2", answers_for(second))
    sync_batch(mturk_batch)
    approve_assignment(Assignment.objects.get(hit=first))  # its one slot is decided: nothing can change
    fake.calls.clear()
    counts = sync_batch(mturk_batch)
    assert counts["units_skipped"] == 1 and counts["missing"] == 0 and counts["unchanged"] == 1
    assert fake.calls.count("ListAssignmentsForHIT") == 1  # only the HIT still awaiting a decision
    fake.assignments[Assignment.objects.get(hit=second).platform_ref]["AssignmentStatus"] = "Approved"
    assert sync_batch(mturk_batch)["changed"] == 1  # MTurk's auto-approval is still followed
    assert Assignment.objects.get(hit=second).status == "approved"
    assert sync_batch(mturk_batch)["units_skipped"] == 2
