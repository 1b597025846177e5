"""The platform's events reach webhooks: a submission's follow-up job emits ``submission.received`` and,
with the batch's last HIT done, ``batch.completed``, each once however often the job runs; an approval
through the API emits ``assignment.approved``; a budget stop, or a bonus refused over the budget, emits
``budget.reached``."""

from __future__ import annotations

from unittest import mock

import pytest
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch
from crowd.followup_tasks import after_submission
from crowd.services import events as crowd_events
from crowd.services.budget import enforce_budget
from tests.api.conftest import submitted_on_fake
from tests.factories import make_assignment, make_batch, make_textbook, make_worker
from webhooks import tasks
from webhooks.models import Delivery, Endpoint, Event

pytestmark = pytest.mark.django_db

ALL = [
    "submission.received",
    "assignment.approved",
    "assignment.rejected",
    "batch.completed",
    "budget.reached",
]


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []
    monkeypatch.setattr(tasks.deliver, "delay", ids.append)
    return ids


def test_after_submission__emits_submission_and_batch_completed_once(
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    endpoint = Endpoint.objects.create(url="https://hooks.example.org/", events=ALL)
    batch = make_batch(
        make_textbook("tb", ["Cells divide by mitosis."]),
        kind=Batch.Kind.SCIQ_QUESTION,
        status=Batch.Status.PUBLISHED,
        assignments_per_hit=1,
    )
    hit = HIT.objects.create(batch=batch, position=0)
    worker = make_worker("PLATFORM-ID-123")
    assignment = make_assignment(
        batch=batch, hit=hit, worker=worker, status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
    )
    with django_capture_on_commit_callbacks(execute=True):
        after_submission(assignment.pk)
        after_submission(assignment.pk)  # a job that runs twice
    types = sorted(Event.objects.values_list("type", flat=True))
    assert types == ["batch.completed", "submission.received"]
    received = Event.objects.get(type="submission.received")
    assert received.data["assignment"]["worker"] == worker.pseudonym
    assert "PLATFORM-ID-123" not in received.body().decode()
    completed = Event.objects.get(type="batch.completed")
    assert completed.data["batch"]["id"] == batch.pk and completed.data["hits"] == 1
    assert sorted(queued) == sorted(Delivery.objects.filter(endpoint=endpoint).values_list("pk", flat=True))
    assert len(queued) == 2


def test_batch_completed__not_while_a_hit_is_open() -> None:
    Endpoint.objects.create(url="https://hooks.example.org/", events=ALL)
    batch = make_batch(status=Batch.Status.PUBLISHED)
    HIT.objects.create(batch=batch, position=0)
    crowd_events.batch_completed_if_done(batch.pk)
    assert not Event.objects.exists()


def test_api_approve__emits_assignment_approved(
    researcher,
    fake,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    Endpoint.objects.create(url="https://hooks.example.org/", events=["assignment.approved"])
    assignment = submitted_on_fake(fake)
    with django_capture_on_commit_callbacks(execute=True):
        answer = researcher.post(
            f"/api/v1/assignments/{assignment.pk}/approve/", {}, content_type="application/json"
        )
    assert answer.status_code == 200, answer.content
    event = Event.objects.get()
    assert event.type == "assignment.approved" and event.data["assignment"]["id"] == assignment.pk
    assert len(queued) == 1


def test_enforce_budget__emits_budget_reached(queued: list[int]) -> None:
    Endpoint.objects.create(url="https://hooks.example.org/", events=["budget.reached"])
    batch = make_batch(status=Batch.Status.PUBLISHED, budget_cap_cents=100, reward_cents=50)
    with mock.patch("crowd.services.budget.budget_allows_one_more", return_value=False):
        assert enforce_budget(batch) is True
    event = Event.objects.get()
    assert event.type == "budget.reached" and event.data["budget_cap_cents"] == 100


def test_bonus_refused_over_budget__emits_budget_reached_once_per_cap(
    researcher,
    fake,
    queued: list[int],
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    """The review path's over-budget refusal is a reach too; further refusals and the stop add nothing
    under the same cap, and a raised cap that is reached again gives a second event."""
    Endpoint.objects.create(url="https://hooks.example.org/", events=["budget.reached"])
    assignment = submitted_on_fake(fake)
    batch = assignment.hit.batch
    Batch.objects.filter(pk=batch.pk).update(budget_cap_cents=30)

    def bonus(cents: int) -> int:
        with django_capture_on_commit_callbacks(execute=True):
            answer = researcher.post(
                f"/api/v1/assignments/{assignment.pk}/bonus/",
                {"cents": cents, "reason": f"Bonus of {cents}"},
                content_type="application/json",
            )
        return answer.status_code

    assert bonus(500) == 400 and bonus(600) == 400  # a bulk payout refuses row after row
    event = Event.objects.get()
    assert event.type == "budget.reached" and event.key == f"budget.reached:{batch.pk}:30"
    assert event.data["trigger"] == "payment_refused" and event.data["budget_cap_cents"] == 30
    assert event.data["refused_cents"] >= 500 and event.data["batch"]["id"] == batch.pk
    assert fake.paid == [] and len(queued) == 1
    with mock.patch("crowd.services.budget.budget_allows_one_more", return_value=False):
        assert enforce_budget(batch) is True  # the stop after the refusal: the same reach
    assert Event.objects.count() == 1
    Batch.objects.filter(pk=batch.pk).update(budget_cap_cents=40, status=Batch.Status.PUBLISHED)
    assert bonus(700) == 400
    assert sorted(Event.objects.values_list("key", flat=True)) == [
        f"budget.reached:{batch.pk}:30",
        f"budget.reached:{batch.pk}:40",
    ]


def test_bonus_within_budget__emits_nothing(researcher, fake, queued: list[int]) -> None:  # type: ignore[no-untyped-def]
    Endpoint.objects.create(url="https://hooks.example.org/", events=["budget.reached"])
    assignment = submitted_on_fake(fake)
    Batch.objects.filter(pk=assignment.hit.batch_id).update(budget_cap_cents=10_000)
    answer = researcher.post(
        f"/api/v1/assignments/{assignment.pk}/bonus/",
        {"cents": 25, "reason": "Great"},
        content_type="application/json",
    )
    assert answer.status_code == 200, answer.content
    assert not Event.objects.exists() and queued == []
