"""Tests for crowd/providers/fake/provider.py, factory.py and the base interface defaults."""

from __future__ import annotations

import pytest

from crowd.providers import errors, get_provider, register_provider
from crowd.providers.base import (
    CrowdProvider,
    InMemoryPaymentStore,
    PaymentStatus,
    PaymentStore,
    PublishRequest,
    PublishUnit,
    SubmissionStatus,
)
from crowd.providers.fake.provider import FakeProvider
from crowd.providers.mturk import errors as mturk_errors
from crowd.providers.mturk.provider import MTurkProvider
from crowd.providers.prolific.provider import ProlificProvider


def make_request(**overrides) -> PublishRequest:
    values = dict(
        batch_ref="b1",
        title="t",
        description="d",
        external_url="https://x.org/h",
        reward_cents=100,
        assignments=2,
        units=(PublishUnit("u1"), PublishUnit("u2")),
    )
    values.update(overrides)
    return PublishRequest(**values)


def test_publish_request__rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="reward_cents"):
        make_request(reward_cents=-1)
    with pytest.raises(ValueError, match="assignments"):
        make_request(assignments=0)
    assert make_request(units=()).effective_units()[0].local_ref == "b1"


def test_fake_provider__review_rules_and_single_payment() -> None:
    provider = FakeProvider()
    batch = provider.publish(make_request())
    unit = batch.units[0].platform_id
    a = provider.simulate_submission(unit, "W1", {"flag": ["unrelated"]})
    b = provider.simulate_submission(unit, "W2")
    with pytest.raises(errors.InvalidRequestError, match="no assignment left"):
        provider.simulate_submission(unit, "W3")
    assert provider.approve(batch, a.platform_assignment_id).changed is True
    assert provider.approve(batch, a.platform_assignment_id).changed is False
    provider.reject(batch, b.platform_assignment_id, "off topic")
    with pytest.raises(errors.AlreadyDoneError):
        provider.approve(batch, b.platform_assignment_id)
    store = InMemoryPaymentStore()
    assert isinstance(store, PaymentStore)
    results = [
        provider.bonus(batch, a.platform_assignment_id, "W1", 50, "r", "k", store).status for _ in range(2)
    ]
    assert results == [PaymentStatus.PAID, PaymentStatus.ALREADY_PAID] and len(provider.paid) == 1


def test_reconcile__new_changed_missing() -> None:
    provider = FakeProvider()
    batch = provider.publish(make_request())
    unit = batch.units[0].platform_id
    a = provider.simulate_submission(unit, "W1")
    b = provider.simulate_submission(unit, "W2")
    provider.approve(batch, b.platform_assignment_id)
    local = {b.platform_assignment_id: SubmissionStatus.SUBMITTED, "LOST": SubmissionStatus.SUBMITTED}
    report = provider.reconcile(batch, local)
    assert [s.platform_assignment_id for s in report.new] == [a.platform_assignment_id]
    assert [s.status for s in report.changed] == [SubmissionStatus.APPROVED]
    assert report.missing == ("LOST",) and report.unchanged_count == 0


def test_get_provider__builds_each_platform_from_settings() -> None:
    assert isinstance(get_provider("fake", {}), FakeProvider)
    mturk = get_provider("mturk", {"MTURK_SANDBOX": False})
    assert isinstance(mturk, MTurkProvider) and mturk.sandbox is False
    assert mturk.client.meta.endpoint_url == "https://mturk-requester.us-east-1.amazonaws.com"

    class Settings:
        PROLIFIC_API_TOKEN = "tok"
        PROLIFIC_API_URL = "http://127.0.0.1:9/api/v1/"

    prolific = get_provider("prolific", Settings())
    assert isinstance(prolific, ProlificProvider) and prolific.client.base_url == "http://127.0.0.1:9/api/v1/"


def test_get_provider__unknown_or_unconfigured_raises() -> None:
    with pytest.raises(errors.ProviderConfigError, match="unknown crowd provider 'nope'"):
        get_provider("nope", {})
    with pytest.raises(errors.ProviderConfigError, match="PROLIFIC_API_TOKEN"):
        get_provider("prolific", {})


def test_register_provider__lets_the_local_provider_plug_in() -> None:
    class Local(FakeProvider):
        name = "local"

    register_provider("local-test", lambda config: Local())
    provider = get_provider("local-test", {})
    assert isinstance(provider, CrowdProvider) and provider.name == "local"


def test_error_str__names_platform_operation_code_and_status() -> None:
    err = mturk_errors.MTurkNotFoundError(
        "Assignment A1 does not exist", code="RequestError", status=400, operation="send_bonus"
    )
    assert str(err) == "[mturk send_bonus RequestError HTTP 400] Assignment A1 does not exist"
    assert isinstance(err, errors.NotFoundError) and isinstance(err, mturk_errors.MTurkError)
    assert errors.error_for("mturk", errors.NotFoundError) is mturk_errors.MTurkNotFoundError
    assert errors.error_for("nowhere", errors.NotFoundError) is errors.NotFoundError


def test_register_errors__refuses_a_class_that_is_not_of_its_kind() -> None:
    with pytest.raises(TypeError, match="must inherit from NotFoundError"):
        errors.register_errors("nowhere", {errors.NotFoundError: errors.TransientError})
