"""Accounts of each role with API tokens, and a batch published on a fake platform with a submission."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.models import HIT, Assignment, Batch
from crowd.models import BatchPlatformState
from crowd.providers import factory
from crowd.providers.base import PublishRequest, PublishUnit
from crowd.providers.fake.provider import FakeProvider
from tests.factories import make_assignment, make_batch, make_researcher, make_textbook, make_worker


@pytest.fixture(autouse=True)
def _fresh_throttles() -> Iterator[None]:
    """Throttle counts live in the cache: each test starts with none."""
    cache.clear()
    yield
    cache.clear()


def token_client(user: object) -> Client:
    """A client that sends ``user``'s API token on every request (no session, no CSRF)."""
    key = Token.objects.get_or_create(user=user)[0].key
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


@pytest.fixture
def researcher() -> Client:
    return token_client(make_researcher("rita"))


@pytest.fixture
def viewer() -> Client:
    """An account that may only view (the researcher pages' ``view`` permission)."""
    user = get_user_model().objects.create_user("vic", password="pw-for-tests")
    user.user_permissions.add(
        Permission.objects.get(codename="view_batch", content_type__app_label="annotation")
    )
    return token_client(user)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    provider = FakeProvider()
    monkeypatch.setitem(factory._REGISTRY, "fake", lambda config: provider)
    return provider


def submitted_on_fake(fake: FakeProvider, worker: str = "W1") -> Assignment:
    """A submitted assignment of a batch published on ``fake`` (reward 10 cents)."""
    batch = make_batch(
        make_textbook(f"tb-{worker.lower()}", ["Cells divide by mitosis in most tissues."]),
        name=f"fake-{worker}",
        kind=Batch.Kind.SCIQ_QUESTION,
        provider="fake",
        status=Batch.Status.PUBLISHED,
        reward_cents=10,
    )
    hit = HIT.objects.create(batch=batch, position=0)
    published = fake.publish(
        PublishRequest(
            batch_ref=str(batch.pk),
            title="t",
            description="d",
            external_url="http://testserver/hit/",
            reward_cents=10,
            units=(PublishUnit(str(hit.pk)),),
        )
    )
    BatchPlatformState.change(batch.pk, published=asdict(published))
    batch.platform_ref = published.platform_batch_id
    batch.save(update_fields=["platform_ref"])
    sub = fake.simulate_submission(published.units[0].platform_id, worker)
    return make_assignment(
        batch=batch,
        hit=hit,
        worker=make_worker(worker, platform="fake"),
        platform_ref=sub.platform_assignment_id,
        status=Assignment.Status.SUBMITTED,
        answers={"question": "What divides cells?"},
    )
