"""Providers' ``add_units``: HITs added to a batch already on the platform (SciQ stage 2), never twice.

MTurk calls go through botocore's Stubber (checked against the real API model); Prolific runs against
the fake Prolific server. No database.
"""

from __future__ import annotations

from botocore.stub import ANY

from crowd.providers.base import PublishedBatch, PublishedUnit, PublishRequest, PublishUnit
from crowd.providers.fake.provider import FakeProvider
from crowd.providers.mturk import api as mturk_api
from crowd.providers.mturk.provider import MTurkProvider, annotation_for, token_for
from crowd.providers.prolific.provider import ProlificProvider
from tests.fakes import fixtures as _fakes
from tests.fakes.fixtures import load_response

mturk_stubber = _fakes.mturk_stubber
prolific_client = _fakes.prolific_client

URL = "https://crowdqa.example.org/hit/12/"


def make_request(**overrides: object) -> PublishRequest:
    values: dict[str, object] = dict(
        batch_ref="12",
        title="Check a science exam question",
        description="Validate a question and choose wrong answers.",
        external_url=URL,
        reward_cents=30,
        assignments=2,
        duration_seconds=1200,
    )
    values.update(overrides)
    return PublishRequest(**values)  # type: ignore[arg-type]


def _hit(hit_id: str, annotation: str = "") -> dict:
    hit = load_response("mturk/create_hit_with_hit_type")["HIT"]
    hit.update(HITId=hit_id, HITTypeId="HT12", RequesterAnnotation=annotation)
    return hit


def test_add_units__mturk_creates_hit_with_batch_hit_type_and_unit_token(mturk_stubber) -> None:  # noqa: ANN001
    client, stubber = mturk_stubber
    batch = PublishedBatch("mturk", "12", "HT12", (PublishedUnit("101", "H101"),))
    request = make_request()
    stubber.add_response(
        "create_hit_with_hit_type",
        {"HIT": _hit("H102")},
        {
            "HITTypeId": "HT12",
            "MaxAssignments": 2,
            "LifetimeInSeconds": request.lifetime_seconds,
            "Question": mturk_api.external_question(URL),
            "RequesterAnnotation": annotation_for("12", "102"),
            "UniqueRequestToken": token_for("hit", "12", "102"),
        },
    )
    added = MTurkProvider(client).add_units(batch, request, (PublishUnit("101"), PublishUnit("102")))
    assert added == (PublishedUnit("101", "H101"), PublishedUnit("102", "H102"))  # 101 is not re-created


def test_add_units__mturk_lost_answer_finds_the_hit_instead_of_duplicating(mturk_stubber) -> None:  # noqa: ANN001
    client, stubber = mturk_stubber
    batch = PublishedBatch("mturk", "12", "HT12", ())
    stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message='The idempotency token "hit-12-102" has already been processed. (1)',
        expected_params={
            "HITTypeId": "HT12",
            "MaxAssignments": 2,
            "LifetimeInSeconds": ANY,
            "Question": ANY,
            "RequesterAnnotation": annotation_for("12", "102"),
            "UniqueRequestToken": token_for("hit", "12", "102"),
        },
    )
    stubber.add_response(
        "list_hits",
        {"NumResults": 2, "HITs": [_hit("H9", "crowdqa:11:5"), _hit("H102", annotation_for("12", "102"))]},
        {"MaxResults": 100},
    )
    added = MTurkProvider(client).add_units(batch, make_request(), (PublishUnit("102"),))
    assert added == (PublishedUnit("102", "H102"),)


def test_add_units__prolific_sets_places_for_every_unit_once(fake_prolific_server, prolific_client) -> None:  # noqa: ANN001
    provider = ProlificProvider(prolific_client)
    batch = provider.publish(make_request(units=(PublishUnit("101"),)))
    study = fake_prolific_server.fake.studies[batch.platform_batch_id]
    assert study["total_available_places"] == 2
    added = provider.add_units(batch, make_request(), (PublishUnit("102"), PublishUnit("103")))
    assert added == (
        PublishedUnit("102", batch.platform_batch_id),
        PublishedUnit("103", batch.platform_batch_id),
    )
    assert study["total_available_places"] == 6
    provider.add_units(batch, make_request(), (PublishUnit("102"), PublishUnit("103")))  # a retry
    assert study["total_available_places"] == 6
    listed = PublishedBatch("prolific", "12", batch.platform_batch_id, batch.units + added)
    provider.add_units(listed, make_request(), (PublishUnit("103"),))  # already counted
    assert study["total_available_places"] == 6
    assert fake_prolific_server.fake.calls.count(f"PATCH studies/{batch.platform_batch_id}/") == 1


def test_add_units__fake_provider_adds_each_unit_once() -> None:
    fake = FakeProvider()
    batch = fake.publish(make_request(units=(PublishUnit("101"),)))
    first = fake.add_units(batch, make_request(), (PublishUnit("102"),))
    again = fake.add_units(batch, make_request(), (PublishUnit("101"), PublishUnit("102")))
    assert again == (batch.units[0], first[0])
    assert [c for c in fake.calls if c[0] == "add_unit"] == [("add_unit", "102")]
