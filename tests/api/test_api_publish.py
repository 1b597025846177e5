"""Publishing through the API needs the estimate first, as on the New batch page, and expert batches
(a sample of a real SyllabusQA release, opened at once on the local crowd) go the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from annotation.models import Batch
from exports.services.releases import register_release
from tests.evaluation.conftest import _benchmarks_in_tmp, small_release, trimmed_syllabusqa  # noqa: F401
from tests.factories import make_corpus, make_document

pytestmark = pytest.mark.django_db

NEW_BATCH = {"kind": "syllabus_qa", "provider": "local", "corpus": "syl", "reward": "0.50", "assignments": 2}


def _post(client: Client, url: str, body: object = None) -> object:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


@pytest.fixture
def corpus() -> None:
    made = make_corpus(name="syl")
    for d in range(3):
        make_document(made, name=f"course-{d}", text=f"Office hours are on day {d}.", page_starts=[0])


def test_publish_at_once__needs_the_estimate_of_exactly_these_values(
    researcher: Client, corpus: None
) -> None:
    unconfirmed = _post(researcher, "/api/v1/batches/", {**NEW_BATCH, "publish": True})
    assert unconfirmed.status_code == 409
    shown = unconfirmed.json()["estimate"]
    assert shown["hits"] == 3 and shown["rewards_cents"] == 300 and len(shown["estimated"]) == 64
    assert Batch.objects.count() == 0

    estimate = _post(researcher, "/api/v1/batches/estimate/", NEW_BATCH).json()
    assert estimate["estimated"] == shown["estimated"]  # the same values give the same digest
    changed = {**NEW_BATCH, "reward": "0.40", "publish": True, "estimated": estimate["estimated"]}
    refused = _post(researcher, "/api/v1/batches/", changed)
    assert refused.status_code == 409 and refused.json()["estimate"]["rewards_cents"] == 240
    assert refused.json()["estimate"]["estimated"] != estimate["estimated"] and Batch.objects.count() == 0

    forged = _post(researcher, "/api/v1/batches/", {**NEW_BATCH, "publish": True, "estimated": "0" * 64})
    assert forged.status_code == 409 and Batch.objects.count() == 0

    published = _post(
        researcher, "/api/v1/batches/", {**NEW_BATCH, "publish": True, "estimated": estimate["estimated"]}
    )
    assert published.status_code == 201, published.content
    body = published.json()
    assert body["status"] == "published" and body["estimate"]["total_cents"] == estimate["total_cents"]
    assert Batch.objects.get(pk=body["id"]).status == Batch.Status.PUBLISHED


def test_publish_at_once__a_viewer_is_refused(viewer: Client, researcher: Client, corpus: None) -> None:
    estimate = _post(researcher, "/api/v1/batches/estimate/", NEW_BATCH).json()
    confirmed = {**NEW_BATCH, "publish": True, "estimated": estimate["estimated"]}
    assert _post(viewer, "/api/v1/batches/", confirmed).status_code == 403
    assert Batch.objects.count() == 0


def test_draft__still_needs_no_estimate(researcher: Client, corpus: None) -> None:
    created = _post(researcher, "/api/v1/batches/", NEW_BATCH)
    assert created.status_code == 201 and created.json()["status"] == "draft"


def test_expert_batch__estimate_then_open_on_real_syllabusqa(
    researcher: Client,
    small_release: Path,  # noqa: F811
) -> None:
    release = register_release(small_release)
    expert = {"kind": "expert_answer", "release": release.pk, "split": "test", "sample": 3}
    estimate = _post(researcher, "/api/v1/batches/estimate/", expert)
    assert estimate.status_code == 200, estimate.content
    shown = estimate.json()
    assert shown["hits"] == 3 and shown["total_cents"] == 0 and "nothing is paid" in shown["note"]
    # no draft for an expert batch: without the confirmation the answer is the estimate
    assert _post(researcher, "/api/v1/batches/", expert).status_code == 409
    assert Batch.objects.count() == 0
    opened = _post(
        researcher, "/api/v1/batches/", {**expert, "publish": True, "estimated": shown["estimated"]}
    )
    assert opened.status_code == 201, opened.content
    batch = Batch.objects.get(pk=opened.json()["id"])
    assert batch.kind == Batch.Kind.EXPERT_ANSWER and batch.provider == "local"
    assert batch.status == Batch.Status.PUBLISHED and batch.hits.count() == 3
    assert batch.created_by.username == "rita"


def test_expert_batch__bad_bodies_are_400(researcher: Client, small_release: Path) -> None:  # noqa: F811
    release = register_release(small_release)
    cases = [
        ({"kind": "expert_answer", "sample": 3}, "release"),
        ({"kind": "expert_answer", "release": release.pk}, "sample"),
        ({"kind": "expert_answer", "release": 2**40, "sample": 3}, "release"),
        ({"kind": "expert_answer", "release": release.pk, "sample": 3, "split": "nope"}, "split"),
        ({"kind": "expert_answer", "release": release.pk, "sample": 3, "provider": "mturk"}, "provider"),
        ({"kind": "syllabus_qa", "corpus": "syllabusqa"}, "reward"),  # only expert batches go unpaid
    ]
    for body, field in cases:
        answer = _post(researcher, "/api/v1/batches/estimate/", body)
        assert answer.status_code == 400 and field in answer.json(), (body, answer.content)
    assert Batch.objects.count() == 0
