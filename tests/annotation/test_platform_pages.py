"""What the researcher pages offer for each platform, as the platform's traits decide it."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.platforms import Platform
from tests.factories import make_assignment, make_batch, make_researcher, make_worker

INVITES = "Invite local workers"
NOTIFY = "Message the workers"
PROLIFIC_REASON = "(at least 100 characters on Prolific)"


@pytest.fixture
def researcher(client: Client) -> Client:
    client.force_login(make_researcher())
    return client


def _submitted_on(platform: str) -> Assignment:
    batch = make_batch(provider=platform, status=Batch.Status.PUBLISHED)
    return make_assignment(
        batch=batch,
        worker=make_worker(f"{platform}-worker", platform=platform),
        platform_ref=f"{platform}-assignment",
        status=Assignment.Status.SUBMITTED,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "platform, invites, notify, reason",
    [
        (Platform.LOCAL, True, True, False),  # local workers read messages on their home page
        ("mturk", False, True, False),
        ("prolific", False, True, True),
    ],
)
def test_researcher_pages__offer_what_the_platform_supports(
    researcher: Client, platform: str, invites: bool, notify: bool, reason: bool
) -> None:
    assignment = _submitted_on(platform)
    batch_page = researcher.get(f"/batches/{assignment.hit.batch_id}/").content.decode()
    assignment_page = researcher.get(f"/assignments/{assignment.pk}/").content.decode()
    assert (INVITES in batch_page, NOTIFY in batch_page) == (invites, notify)
    assert (PROLIFIC_REASON in assignment_page) == reason
    assert "Reason shown to the worker" in assignment_page


@pytest.mark.django_db
def test_hit_link_without_platform_parameters__names_the_arriving_platforms(client: Client) -> None:
    batch = make_batch(provider="mturk", status=Batch.Status.PUBLISHED)
    response = client.get(f"/hit/{batch.pk}/")
    assert response.status_code == 403
    assert (
        "Open this task from Amazon Mechanical Turk or Prolific, or use the invite link"
        in response.content.decode()
    )
