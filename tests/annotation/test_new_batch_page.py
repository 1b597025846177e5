"""The "New batch" page: estimate and hourly pay first, then publish or a draft; each bad field named."""

from __future__ import annotations

import pytest

from annotation.models import Batch
from tests.factories import make_corpus, make_document, make_researcher

pytestmark = pytest.mark.django_db

BASE = {
    "kind": "syllabus_qa",
    "provider": "local",
    "corpus": "syl",
    "assignments": "2",
    "reward": "3.00",
    "time_limit": "90",
    "expected_minutes": "60",
}


@pytest.fixture
def researcher(client):  # type: ignore[no-untyped-def]
    corpus = make_corpus(name="syl")
    for name in ("bio101", "chem200"):
        make_document(corpus, name=name)
    client.force_login(make_researcher())
    return client


def test_estimate__shows_cost_and_hourly_pay_and_creates_nothing(researcher) -> None:  # type: ignore[no-untyped-def]
    empty = researcher.get("/batches/new/").content.decode()
    assert 'name="reward"' in empty and 'value="publish"' not in empty and "New batch</a>" in empty
    page = researcher.post("/batches/new/", {**BASE, "action": "estimate"}).content.decode()
    assert Batch.objects.count() == 0
    assert "<strong>12.00 USD</strong>" in page  # 2 HITs x 2 assignments x 3.00 USD, no local fees
    assert (
        "3.00 USD/h</strong> at 60 min per HIT" in page
        and "2.00 USD/h if a worker uses the whole 90 min" in page
    )
    assert "Below the US federal minimum wage" in page
    assert 'value="publish"' in page


def test_publish__needs_the_estimate_of_the_same_values(researcher) -> None:  # type: ignore[no-untyped-def]
    estimate = researcher.post("/batches/new/", {**BASE, "action": "estimate"}).content.decode()
    fingerprint = estimate.split('name="estimated" value="')[1].split('"')[0]
    changed = researcher.post(
        "/batches/new/", {**BASE, "reward": "9.00", "action": "publish", "estimated": fingerprint}
    )
    assert Batch.objects.count() == 0 and "values changed since the last estimate" in changed.content.decode()
    response = researcher.post("/batches/new/", {**BASE, "action": "publish", "estimated": fingerprint})
    batch = Batch.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/batches/{batch.pk}/"
    assert batch.status == Batch.Status.PUBLISHED and batch.hits.count() == 2 and batch.reward_cents == 300
    assert (
        batch.assignments_per_hit == 2 and batch.time_limit_minutes == 90 and batch.created_by.username == "r"
    )
    page = researcher.get(response["Location"]).content.decode()
    assert "is published on Local crowd with 2 HITs" in page


def test_draft__saved_then_published_from_the_batch_page(researcher) -> None:  # type: ignore[no-untyped-def]
    response = researcher.post("/batches/new/", {**BASE, "documents": "bio101\n", "action": "draft"})
    batch = Batch.objects.get()
    assert batch.status == Batch.Status.DRAFT and batch.hits.count() == 1
    assert 'value="publish"' in researcher.get(response["Location"]).content.decode()
    researcher.post(f"/batches/{batch.pk}/status/", {"action": "publish"})
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED


def test_bad_values__each_field_named_and_values_kept(researcher) -> None:  # type: ignore[no-untyped-def]
    response = researcher.post(
        "/batches/new/",
        {
            **BASE,
            "reward": "-1",
            "assignments": "0",
            "documents": "bio101\nnot-a-syllabus",
            "quiz": "11",
            "time_limit": "x\x00",
            "title": "Keep this title",
            "action": "estimate",
        },
    )
    page = response.content.decode()
    assert response.status_code == 400 and Batch.objects.count() == 0
    for label in (
        "Reward per assignment (USD)",
        "Workers per HIT",
        "Documents",
        "Known-answer questions per HIT",
    ):
        assert f"{label}:" in page
    assert "Not in corpus syl: not-a-syllabus" in page and "Time limit per HIT (minutes):" in page
    assert 'value="Keep this title"' in page and "not-a-syllabus</textarea>" in page


def test_over_budget__named_on_the_budget_field(researcher) -> None:  # type: ignore[no-untyped-def]
    page = researcher.post("/batches/new/", {**BASE, "budget": "5", "action": "draft"}).content.decode()
    assert Batch.objects.count() == 0
    assert "Budget cap (USD, fees included): the estimated cost 12.00 USD" in page


def test_screening_qualification__same_options_as_the_command(researcher) -> None:  # type: ignore[no-untyped-def]
    screening = researcher.post(
        "/batches/new/", {**BASE, "kind": "screening", "quiz": "0", "documents": "bio101", "action": "draft"}
    )
    assert screening.status_code == 302
    screen = Batch.objects.get(kind="screening")
    assert screen.options["grants_qualification"] == f"screened-{screen.pk}"
    both = {**BASE, "require_qualification": str(screen.pk), "exclude_batches": [str(screen.pk)]}
    refused = researcher.post("/batches/new/", {**both, "action": "draft"}).content.decode()
    assert f"Keep out workers of: requiring and excluding Batch({screen.pk}) contradict each other" in refused
    researcher.post("/batches/new/", {**BASE, "require_qualification": str(screen.pk), "action": "draft"})
    main = Batch.objects.get(kind="syllabus_qa")
    assert main.options["required_qualification"] == f"screened-{screen.pk}"


def test_page__needs_the_launch_permission(client) -> None:  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model

    assert client.get("/batches/new/")["Location"].startswith("/accounts/login/")
    client.force_login(get_user_model().objects.create_user("x", password="pw-for-tests", is_staff=True))
    assert client.post("/batches/new/", {**BASE, "action": "publish"}).status_code == 403
    assert Batch.objects.count() == 0
