"""Each platform's traits: one per stored platform name, inherited by its provider, declared by the fake."""

from __future__ import annotations

import importlib

import pytest

from annotation.platforms import Platform
from crowd.providers.arrival import ArrivalError, Finished
from crowd.providers.base import CrowdProvider
from crowd.providers.errors import ProviderConfigError
from crowd.providers.factory import config_from
from crowd.providers.fake.provider import FakeProvider
from crowd.providers.mturk.provider import MTurkProvider
from crowd.providers.mturk.traits import MTURK_FRAME_ORIGINS
from crowd.providers.prolific.provider import ProlificProvider
from crowd.providers.traits import (
    PlatformTraits,
    completion_for,
    framing_origins,
    hosted_platforms,
    parse_arrival,
    traits_for,
    worker_id_patterns,
)

#: Every trait a platform decides (the class attributes of ``PlatformTraits`` but plumbing).
TRAITS = sorted(
    name
    for name in PlatformTraits.__annotations__
    if not name.startswith("_") and name not in ("name", "do_not_call_in_templates")
)


def test_traits_for__every_stored_platform_has_traits_named_after_it() -> None:
    assert Platform.values() == ["local", "mturk", "prolific"]  # the local crowd first, then PLATFORMS' order
    assert {p: traits_for(p).name for p in Platform.values()} == {p: p for p in Platform.values()}
    assert Platform.choices() == [
        ("local", "Local crowd"),
        ("mturk", "Amazon Mechanical Turk"),
        ("prolific", "Prolific"),
    ]


def test_traits_for__unknown_name_is_refused() -> None:
    with pytest.raises(ProviderConfigError, match="unknown crowd platform 'nowhere'"):
        traits_for("nowhere")


def test_providers__inherit_their_platform_traits() -> None:
    from crowd.providers.local.provider import LocalProvider

    for provider in (MTurkProvider, ProlificProvider, LocalProvider):
        assert issubclass(provider, traits_for(provider.name))


def test_provider_path__names_a_provider_of_the_platform_itself() -> None:
    for name in (*Platform.values(), "fake"):
        module, _, attribute = traits_for(name).provider_path.partition(":")
        provider = getattr(importlib.import_module(module), attribute)
        assert issubclass(provider, CrowdProvider) and issubclass(provider, traits_for(name))
        assert provider.name == name


def test_fake_provider__declares_every_trait_itself() -> None:
    """A trait added to ``PlatformTraits`` must be decided for the fake too, not inherited silently."""
    assert TRAITS  # the list is read from the class, so an empty one would prove nothing
    assert [t for t in TRAITS if t not in vars(FakeProvider)] == []
    assert traits_for("fake") is FakeProvider


def test_completion_uses_code__only_where_the_completion_step_changes_with_it() -> None:
    """A platform that says its completion ignores the code (the thank-you step then skips reading the
    batch's platform state) must send the worker to the same place whatever the code is."""
    finished = {"submit_to": "https://www.mturk.com", "assignment_ref": "A1"}
    for name in (*Platform.values(), "fake"):
        with_code = completion_for(name, Finished(**finished, completion_code="C0DE"))
        without = completion_for(name, Finished(**finished))
        assert traits_for(name).completion_uses_code == (with_code != without), name
    assert traits_for("prolific").completion_uses_code


def test_hosted_platforms__only_the_local_crowd() -> None:
    assert hosted_platforms() == (Platform.LOCAL,)


def test_completion_for__each_platform_sends_its_workers_back_its_own_way() -> None:
    mturk = completion_for("mturk", Finished(submit_to="https://www.mturk.com", assignment_ref="A1"))
    prolific = completion_for("prolific", Finished(completion_code="C0DE"))
    assert mturk is not None and (mturk.post_to, mturk.assignment_id) == (
        "https://www.mturk.com/mturk/externalSubmit",
        "A1",
    )
    assert prolific is not None and prolific.redirect_to.endswith("?cc=C0DE")
    assert completion_for("local", Finished()) is None and completion_for("fake", Finished()) is None
    evil = completion_for("mturk", Finished(submit_to="https://evil.example", assignment_ref="A1"))
    assert evil is not None and not evil.post_to and "MTurk" in evil.problem


MTURK_ARRIVAL = {"assignmentId": "A1", "hitId": "H1", "workerId": "W1", "turkSubmitTo": "http://127.0.0.1:5"}


def test_stand_in_origins__a_configured_mturk_stand_in_is_trusted_like_mturk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL_MTURK", raising=False)
    with pytest.raises(ArrivalError, match="turkSubmitTo must be MTurk's worker site"):
        parse_arrival(MTURK_ARRIVAL)
    config = {"MTURK_EXTRA_SUBMIT_ORIGINS": ["http://127.0.0.1:5"]}
    arrival = parse_arrival(MTURK_ARRIVAL, config)
    assert arrival is not None and arrival.submit_to == "http://127.0.0.1:5/mturk/externalSubmit"
    done = completion_for("mturk", Finished(submit_to=arrival.submit_to, assignment_ref="A1"), config)
    assert done is not None and done.post_to == arrival.submit_to
    assert framing_origins({}) == MTURK_FRAME_ORIGINS
    monkeypatch.setenv("AWS_ENDPOINT_URL_MTURK", "http://127.0.0.1:7/")
    assert framing_origins(config) == (*MTURK_FRAME_ORIGINS, "http://127.0.0.1:5", "http://127.0.0.1:7")


def test_finished__each_platform_reads_what_its_arrival_kept() -> None:
    meta = {"turk_submit_to": "https://www.mturk.com/mturk/externalSubmit", "study_id": "S1"}
    mturk = traits_for("mturk").finished(meta, "A1", "")
    assert (mturk.submit_to, mturk.assignment_ref) == (meta["turk_submit_to"], "A1")
    prolific = traits_for("prolific").finished(meta, "SESSION1", "C0DE")
    assert (prolific.submit_to, prolific.completion_code) == ("", "C0DE")
    completion = completion_for("mturk", mturk)
    assert completion is not None and completion.page and completion.post_to == meta["turk_submit_to"]


def test_worker_id_patterns__each_platform_describes_its_own_ids_for_the_privacy_gate() -> None:
    from exports.privacy import ID_KINDS, find_pii

    assert [p.kind for p in worker_id_patterns()] == ["mturk_worker_id", "prolific_id"]
    assert traits_for("local").worker_id is None
    assert ID_KINDS == {"mturk_worker_id", "prolific_id"}
    assert find_pii("worker A1B2C3D4E5F6G7 and pid 5f8a1b2c3d4e5f6a7b8c9d0e wrote it") == [
        ("mturk_worker_id", "A1B2C3D4E5F6G7"),
        ("prolific_id", "5f8a1b2c3d4e5f6a7b8c9d0e"),
    ]


@pytest.mark.django_db
def test_options__only_the_batchs_own_platform_gets_its_launch_settings() -> None:
    from annotation.models import Batch
    from crowd.services.publishing import publish_request
    from tests.factories import make_textbook

    corpus = make_textbook("opts", ["A passage about cells and their parts."])
    filters = [{"filter_id": "age", "selected_range": {"lower": 18}}]
    made = {
        provider: Batch.objects.create(
            name=provider,
            kind="sciq_question",
            provider=provider,
            corpus=corpus,
            options={"prolific_filters": filters},
        )
        for provider in ("prolific", "mturk")
    }
    assert publish_request(made["prolific"], FakeProvider()).extra == {"prolific_filters": filters}
    assert publish_request(made["mturk"], FakeProvider()).extra == {}


def test_config_from__a_platform_reads_its_settings_from_the_environment(monkeypatch, settings) -> None:
    """config/settings.py names no platform: each package reads its variables, with their defaults."""
    for variable in (
        "MTURK_SANDBOX",
        "PROLIFIC_RETRIES",
        "PROLIFIC_API_TOKEN",
        "CROWDQA_MTURK_TEST_SUBMIT_ORIGINS",
    ):
        monkeypatch.delenv(variable, raising=False)
    config = config_from(settings)
    assert config["MTURK_SANDBOX"] is True
    assert (config["MTURK_MAX_ATTEMPTS"], config["PROLIFIC_RETRIES"]) == (10, 8)
    assert config["PROLIFIC_API_URL"] == "https://api.prolific.com/api/v1/"
    assert (config["PROLIFIC_API_TOKEN"], config["MTURK_EXTRA_SUBMIT_ORIGINS"]) == ("", [])
    assert "AWS_ENDPOINT_URL_MTURK" not in config  # boto3 reads it from the environment itself

    monkeypatch.setenv("MTURK_SANDBOX", "false")
    monkeypatch.setenv("PROLIFIC_RETRIES", "3")
    monkeypatch.setenv("PROLIFIC_API_TOKEN", "tok")
    monkeypatch.setenv("CROWDQA_MTURK_TEST_SUBMIT_ORIGINS", " http://127.0.0.1:5 ,, http://localhost:6")
    config = config_from(settings)
    assert (config["MTURK_SANDBOX"], config["PROLIFIC_RETRIES"], config["PROLIFIC_API_TOKEN"]) == (
        False,
        3,
        "tok",
    )
    assert config["MTURK_EXTRA_SUBMIT_ORIGINS"] == ["http://127.0.0.1:5", "http://localhost:6"]


def test_config_from__a_django_setting_of_the_same_name_wins_over_the_environment(
    monkeypatch, settings
) -> None:
    monkeypatch.setenv("PROLIFIC_RETRIES", "3")
    monkeypatch.setenv("MTURK_SANDBOX", "true")
    settings.PROLIFIC_RETRIES = 1
    settings.MTURK_SANDBOX = False
    config = config_from(settings)
    assert (config["PROLIFIC_RETRIES"], config["MTURK_SANDBOX"]) == (1, False)
    # A mapping is taken as it is: what it lacks stays unset.
    assert config_from({"PROLIFIC_RETRIES": 2}) == {"PROLIFIC_RETRIES": 2}


def test_config_from__django_settings_kept_per_process_follow_overrides_and_the_environment(
    monkeypatch,
) -> None:
    """Django's own settings object is read once per process (every HIT page asks): an override still
    shows at once and goes away after, the environment is read on every call, and a caller that changes
    the dict it got changes nobody else's."""
    from django.conf import settings as django_settings
    from django.test import override_settings

    monkeypatch.delenv("PROLIFIC_RETRIES", raising=False)
    assert config_from(django_settings)["PROLIFIC_RETRIES"] == 8
    with override_settings(PROLIFIC_RETRIES=1, PUBLIC_BASE_URL="https://crowd.example.org"):
        config = config_from(django_settings)
        assert (config["PROLIFIC_RETRIES"], config["PUBLIC_BASE_URL"]) == (1, "https://crowd.example.org")
    monkeypatch.setenv("PROLIFIC_RETRIES", "3")
    assert config_from(django_settings)["PROLIFIC_RETRIES"] == 3
    config_from(django_settings)["MTURK_SANDBOX"] = "changed by a caller"
    assert config_from(django_settings)["MTURK_SANDBOX"] != "changed by a caller"
