"""SciQ stage-2 HITs of a stage-1 batch on MTurk / Prolific reach the platform, once each.

Approving stage-1 work creates the validation HIT (Celery task, run inline here) which puts it on the
platform: the first one publishes the stage-2 batch (HIT type + HIT on the fake MTurk, a study on the fake
Prolific), later ones join it (a HIT of the same HIT type; more places on the study). Running the task,
the publish and the sync again duplicates nothing, and a crash between creating a HIT and publishing it
is repaired by the periodic sync.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.followup_tasks import create_validation_hit
from crowd.models import BatchPlatformState
from crowd.providers.base import PublishUnit
from crowd.services import validation_hits
from crowd.services.launching import launch
from crowd.services.lifecycle import provider_for
from crowd.services.publishing import publish_pending_hits, publish_request, published_of
from crowd.services.review import approve_assignment
from crowd.services.sync import batches_to_sync, sync_batch
from crowd.services.validation_hits import on_question_accepted
from crowd.tasks import sync_batches
from distractors.suggestion import ranked_suggestions
from tests.crowd.conftest import answers_for

pytestmark = pytest.mark.django_db


class _Suggester:
    """Six fixed suggestions: the stage-2 HIT needs them, the test does not need the real ranker."""

    name = "test-suggester"
    model_version = "test-suggester"

    def suggest(self, question: str, answer: str, top: int = 6) -> list[Any]:
        words = ["proton", "neutron", "electron", "atom", "cell", "tissue"]
        return ranked_suggestions(((w, 1.0 - i / 10) for i, w in enumerate(words)), top)


@pytest.fixture(autouse=True)
def _quick_suggester(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation_hits, "suggester", lambda: _Suggester())


def _approve(assignment: Assignment, capture) -> None:  # noqa: ANN001 - django_capture_on_commit_callbacks
    """Approve as the review page does; the on-commit Celery task (eager) creates the stage-2 HIT."""
    with capture(execute=True):
        approve_assignment(assignment)


# --- MTurk -------------------------------------------------------------------------------------------


@pytest.fixture
def mturk_stage1(sciq_corpus, fake_mturk_server, settings, eager_celery) -> Batch:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=3, assignments=1, reward_cents=50
        )
    )
    return batch


def _mturk_submitted(batch: Batch, server, worker_id: str, position: int) -> Assignment:  # noqa: ANN001
    """A worker submits on MTurk; the sync brings the submission (and its QA pair) in."""
    hit = batch.hits.get(position=position)
    assignment_id = server.fake.submit(hit.platform_ref, worker_id, answers_for(hit))
    sync_batch(batch)
    return Assignment.objects.get(platform_ref=assignment_id)


def test_stage2_on_mturk__approved_questions_become_hits_of_one_hit_type_once(
    mturk_stage1: Batch, fake_mturk_server, django_capture_on_commit_callbacks
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    _approve(
        _mturk_submitted(mturk_stage1, fake_mturk_server, "WORKER1", 0), django_capture_on_commit_callbacks
    )
    stage2 = mturk_stage1.children.get()
    first = stage2.hits.get()
    assert stage2.status == Batch.Status.PUBLISHED and stage2.platform_ref in fake.hit_types
    assert fake.hits[first.platform_ref]["HITTypeId"] == stage2.platform_ref
    assert f"http://testserver/hit/{stage2.pk}/" in fake.hits[first.platform_ref]["Question"]

    _approve(
        _mturk_submitted(mturk_stage1, fake_mturk_server, "WORKER2", 1), django_capture_on_commit_callbacks
    )
    second = stage2.hits.exclude(pk=first.pk).get()
    stage2.refresh_from_db()
    assert fake.hits[second.platform_ref]["HITTypeId"] == stage2.platform_ref
    assert fake.calls.count("CreateHITType") == 2  # stage 1 and stage 2, nothing more
    assert {u.platform_id for u in published_of(stage2).units} == {first.platform_ref, second.platform_ref}

    hits_on_mturk = len(fake.hits)
    create_validation_hit(second.qa_pair_id)  # the task retried
    assert publish_pending_hits(stage2)["published"] == 0
    assert sync_batch(stage2)["hits_published"] == 0
    assert len(fake.hits) == hits_on_mturk and stage2.hits.count() == 2
    assert fake.calls.count("CreateHITWithHITType") == 3 + 2


def test_stage2_on_mturk__crash_after_mturk_created_the_hit_is_repaired_by_sync(
    mturk_stage1: Batch, fake_mturk_server, django_capture_on_commit_callbacks
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    _approve(
        _mturk_submitted(mturk_stage1, fake_mturk_server, "WORKER1", 0), django_capture_on_commit_callbacks
    )
    stage2 = mturk_stage1.children.get()
    third = _mturk_submitted(mturk_stage1, fake_mturk_server, "WORKER3", 2)
    approve_assignment(third)  # outside the capture: the on-commit task never ran (the worker died)
    hit = on_question_accepted(third.qa_pairs.get())  # ...or it created the HIT and died before publishing
    assert hit.platform_ref == ""
    provider = provider_for(stage2)  # ...after MTurk created it: the answer was lost
    lost = provider.add_units(
        published_of(stage2), publish_request(stage2, provider), (PublishUnit(str(hit.pk)),)
    )
    hits_on_mturk = len(fake.hits)

    result = sync_batches()  # the periodic job
    hit.refresh_from_db()
    assert hit.platform_ref == lost[0].platform_id and len(fake.hits) == hits_on_mturk
    assert any(r["batch"] == stage2.pk and r["hits_published"] == 1 for r in result["batches"])
    assert sync_batches()["batches"] and len(fake.hits) == hits_on_mturk


# --- Prolific ----------------------------------------------------------------------------------------


@pytest.fixture
def prolific_stage1(sciq_corpus, fake_prolific_server, settings, eager_celery) -> Batch:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question",
            corpus="sci",
            provider="prolific",
            limit=3,
            reward_cents=80,
            options={"stage2_assignments": 2, "locales": ["GB"], "prolific_filters": [AGE_FILTER]},
        )
    )
    return batch


AGE_FILTER = {"filter_id": "age", "selected_range": {"lower": 18}}
"""Prolific's own eligibility filter: a launch setting of the platform (its traits' ``options``)."""


def _prolific_submitted(batch: Batch, server, pid: str) -> Assignment:  # noqa: ANN001
    """A participant starts on Prolific, submits on crowdqa's page and enters the completion code."""
    study_id = batch.platform_ref
    session = server.fake.start(study_id, pid)
    client = Client()
    page = client.get(server.fake.study_url_for(study_id, pid, session))["Location"]
    client.post(page + "consent/", {"consent": "yes"})
    assignment = Assignment.objects.get(platform_ref=session)
    assert client.post(page, answers_for(assignment.hit)).status_code == 302
    server.fake.complete(session, BatchPlatformState.of(batch.pk).completion_code)
    assignment.refresh_from_db()
    return assignment


def test_stage2_on_prolific__study_gets_places_for_each_validation_hit_once(
    prolific_stage1: Batch, fake_prolific_server, django_capture_on_commit_callbacks
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    _approve(
        _prolific_submitted(prolific_stage1, fake_prolific_server, "P1"), django_capture_on_commit_callbacks
    )
    stage2 = prolific_stage1.children.get()
    study = fake.studies[stage2.platform_ref]
    assert stage2.status == Batch.Status.PUBLISHED and study["status"] == "ACTIVE"
    assert study["total_available_places"] == 2  # one HIT, two validators
    assert study["external_study_url"].startswith(f"http://testserver/hit/{stage2.pk}/")
    assert stage2.options["locales"] == ["GB"]  # worker requirements follow stage 1
    assert stage2.options["prolific_filters"] == [AGE_FILTER]  # and so do the platform's own settings
    assert (
        AGE_FILTER in study["filters"] and AGE_FILTER in fake.studies[prolific_stage1.platform_ref]["filters"]
    )

    _approve(
        _prolific_submitted(prolific_stage1, fake_prolific_server, "P2"), django_capture_on_commit_callbacks
    )
    assert study["total_available_places"] == 4 and len(fake.studies) == 2
    assert set(stage2.hits.values_list("platform_ref", flat=True)) == {stage2.platform_ref}

    for hit in stage2.hits.all():  # the task retried, then the sync
        create_validation_hit(hit.qa_pair_id)
    sync_batch(stage2)
    assert study["total_available_places"] == 4 and len(fake.studies) == 2
    assert sum(c.startswith("PATCH studies/") for c in fake.calls) == 1


def test_stage2_on_prolific__draft_stage2_left_by_a_crash_is_published_by_sync(
    prolific_stage1: Batch, fake_prolific_server
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    first = _prolific_submitted(prolific_stage1, fake_prolific_server, "P1")
    approve_assignment(first)  # the on-commit task never runs: the worker died after creating the HIT
    hit = on_question_accepted(first.qa_pairs.get())
    stage2 = hit.batch
    assert stage2.status == Batch.Status.DRAFT and len(fake.studies) == 1
    assert stage2.pk in batches_to_sync()

    sync_batches()
    stage2.refresh_from_db()
    assert stage2.status == Batch.Status.PUBLISHED and len(fake.studies) == 2
    assert fake.studies[stage2.platform_ref]["total_available_places"] == 2
    sync_batches()
    assert len(fake.studies) == 2
