"""Auto-approval per batch: submitted work nobody reviewed within the batch's delay is approved by the
periodic task through the reviewers' own path (locally with its reward row, then the platform), once,
and never over a rejection; MTurk is told the same delay when the batch is published."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.batch_options import BatchOptionsError
from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import Payment
from crowd.services.auto_approval import MARK, approve_overdue, describe, summary
from crowd.services.launching import launch
from crowd.services.review import ReviewError, approve_assignment, reject_assignment
from crowd.tasks import auto_approve_overdue
from tests.crowd.conftest import answers_for
from tests.crowd.test_mturk_end_to_end import _work_on_page
from tests.factories import make_assignment, make_batch, make_researcher, make_worker

pytestmark = pytest.mark.django_db


def _submitted(batch: Batch, worker: str, minutes_ago: float) -> Assignment:
    assignment = make_assignment(
        batch=batch,
        worker=make_worker(worker),
        status=Assignment.Status.SUBMITTED,
        answers={"qa-0-question": "When are office hours?"},
    )
    Assignment.objects.filter(pk=assignment.pk).update(
        submitted_at=timezone.now() - timedelta(minutes=minutes_ago)
    )
    return assignment


@pytest.fixture
def local_batch() -> Batch:
    batch = make_batch(reward_cents=40, options={"auto_approve_seconds": 3600})
    batch.publish()
    return batch


def test_overdue_work_is_approved_once_with_its_reward(local_batch: Batch) -> None:
    old = _submitted(local_batch, "old", minutes_ago=61)
    fresh = _submitted(local_batch, "fresh", minutes_ago=30)
    rejected = _submitted(local_batch, "rejected", minutes_ago=120)
    reject_assignment(rejected, "The answers do not come from the syllabus.")
    elsewhere = _submitted(make_batch(local_batch.corpus, name="no delay"), "other", minutes_ago=10_000)

    outcome = approve_overdue()
    assert outcome.approved == [old.pk] and outcome.skipped == []
    states = dict(Assignment.objects.values_list("pk", "status"))
    assert states[old.pk] == Assignment.Status.APPROVED
    assert states[fresh.pk] == states[elsewhere.pk] == Assignment.Status.SUBMITTED
    assert states[rejected.pk] == Assignment.Status.REJECTED
    reward = Payment.objects.get(assignment=old)
    assert (reward.kind, reward.amount_cents) == (Payment.Kind.REWARD, 40)
    assert MARK in Assignment.objects.get(pk=old.pk).platform_meta

    # Again (a second beat, a retried task): nothing more is approved or paid.
    assert auto_approve_overdue() == {"approved": [], "skipped": []}
    assert Payment.objects.count() == 1
    facts = summary(local_batch)
    assert facts is not None
    assert (facts["delay"], facts["waiting"], facts["approved"]) == ("1 hour", 1, 1)
    assert facts["next_at"] == Assignment.objects.get(pk=fresh.pk).submitted_at + timedelta(hours=1)
    assert summary(make_batch(local_batch.corpus, name="plain")) is None


def test_a_rejection_made_meanwhile_stands(local_batch: Batch) -> None:
    """The automatic path re-checks under the row lock: work rejected after it was picked stays rejected."""
    assignment = _submitted(local_batch, "w", minutes_ago=90)
    picked = Assignment.objects.get(pk=assignment.pk)  # read as SUBMITTED by the periodic run
    reject_assignment(assignment, "The answers do not come from the syllabus.")
    with pytest.raises(ReviewError, match="reviewed"):
        approve_assignment(picked, unreviewed_only=True)
    from crowd.services.review import record_approval

    with pytest.raises(Exception, match="rejected already"):
        record_approval(picked, confirmed=False, unreviewed_only=True)
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.REJECTED
    assert not Payment.objects.exists()


def test_work_not_on_file_is_left_for_a_person(local_batch: Batch) -> None:
    """A submission sync restored without its answers is never approved without a person."""
    from crowd.services.review import NO_WORK_ON_FILE

    empty = make_assignment(
        batch=local_batch,
        worker=make_worker("e"),
        status=Assignment.Status.SUBMITTED,
        platform_meta={NO_WORK_ON_FILE: True},
    )
    Assignment.objects.filter(pk=empty.pk).update(submitted_at=timezone.now() - timedelta(days=2))
    outcome = approve_overdue()
    assert outcome.approved == [] and [s["assignment"] for s in outcome.skipped] == [empty.pk]
    assert Assignment.objects.get(pk=empty.pk).status == Assignment.Status.SUBMITTED


def test_the_option_is_checked(local_batch: Batch) -> None:
    for bad in (-1, 30 * 24 * 3600 + 1, "3600", 1.5):
        local_batch.options = {"auto_approve_seconds": bad}
        with pytest.raises(BatchOptionsError, match="auto_approve_seconds"):
            local_batch.save()
    assert [describe(s) for s in (3600, 7200, 86400, 3 * 86400, 5400)] == [
        "1 hour",
        "2 hours",
        "1 day",
        "3 days",
        "90 minutes",
    ]


def test_mturk_gets_the_same_delay_and_is_approved_through(
    sciq_corpus,
    fake_mturk_server,
    settings,  # noqa: ANN001
) -> None:
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question",
            corpus="sci",
            provider="mturk",
            limit=1,
            reward_cents=50,
            options={"auto_approve_seconds": 7200},
        )
    )
    fake = fake_mturk_server.fake
    assert [t["AutoApprovalDelayInSeconds"] for t in fake.hit_types.values()] == [7200]
    hit = batch.hits.get()
    platform_id = _work_on_page(Client(), fake_mturk_server, hit.platform_ref, "WORKER1", answers_for(hit))
    assignment = Assignment.objects.get(platform_ref=platform_id)
    assert approve_overdue().approved == []  # not due yet
    Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now() - timedelta(hours=3))
    assert approve_overdue().approved == [assignment.pk]
    assert fake.assignments[platform_id]["AssignmentStatus"] == "Approved"
    assert Payment.objects.get(assignment=assignment).status == Payment.Status.CONFIRMED


def test_mturk_batch_without_a_delay_keeps_mturks_default(sciq_corpus, fake_mturk_server, settings) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    launch(BatchSpec(kind="sciq_question", corpus="sci", provider="mturk", limit=1, reward_cents=50))
    assert [t["AutoApprovalDelayInSeconds"] for t in fake_mturk_server.fake.hit_types.values()] == [259200]


def test_new_batch_form_and_command_set_it(sciq_corpus) -> None:  # noqa: ANN001
    client = Client()
    client.force_login(make_researcher("rosa"))
    form = {
        "kind": "sciq_question",
        "provider": "local",
        "corpus": "sci",
        "limit": "1",
        "assignments": "1",
        "reward": "0.50",
        "time_limit": "30",
        "auto_approve_hours": "48",
        "action": "publish",
    }
    assert (
        client.post(reverse("annotation:batch-new"), {**form, "auto_approve_hours": "0"}).status_code == 400
    )
    assert (
        client.post(reverse("annotation:batch-new"), {**form, "auto_approve_hours": "721"}).status_code == 400
    )
    from django.http import QueryDict

    from console.launch_views import fingerprint

    typed = QueryDict(mutable=True)
    typed.update(form)
    done = client.post(reverse("annotation:batch-new"), {**form, "estimated": fingerprint(typed)})
    assert done.status_code == 302, done.content.decode()[:2000]
    batch = Batch.objects.get()
    assert batch.options["auto_approve_seconds"] == 48 * 3600
    page = client.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert "approved and paid automatically <strong>2 days</strong>" in page
    assert "No submission is waiting for review." in page

    with pytest.raises(CommandError, match="--auto-approve-hours"):
        call_command(
            "launch_batch", "--kind", "sciq_question", "--corpus", "sci", "--auto-approve-hours", "0"
        )
