"""Help texts, choices and hints that name platforms are built from the platforms' traits and values, so
a platform added under crowd/providers appears in them without an edit elsewhere (issue 25)."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.platforms import Platform
from crowd.checks import check_public_base_url
from crowd.gold import DEFAULT_ATTENTION_FAILURES, attention_default_rule
from crowd.providers.prolific.traits import ProlificTraits
from crowd.providers.traits import arriving, named, platform_traits


class _A:
    short_name = "A"


class _B:
    short_name = "B"


class _C:
    short_name = "C"


def test_named__reads_as_prose() -> None:
    assert named([]) == ""
    assert named([_A]) == "A"  # type: ignore[list-item]
    assert named([_A, _B]) == "A or B"  # type: ignore[list-item]
    assert named([_A, _B, _C], "and") == "A, B and C"  # type: ignore[list-item]
    assert named(arriving(), "/") == " / ".join(t.short_name for t in arriving())


def test_https_hint__names_every_platform_whose_workers_arrive(settings: Any) -> None:
    settings.DEBUG = False
    settings.PUBLIC_BASE_URL = "http://crowdqa.example.org"
    [warning] = check_public_base_url(None)
    assert warning.id == "crowdqa.W002"
    assert warning.hint.startswith(f"{named(arriving(), 'and')} workers must reach HIT pages over https")
    assert all(t.short_name in warning.hint for t in arriving())
    settings.PUBLIC_BASE_URL = "https://crowdqa.example.org"
    assert check_public_base_url(None) == []


def test_https_check__registered_with_the_deploy_checks(settings: Any) -> None:
    from django.core.checks import run_checks

    settings.DEBUG = False
    settings.PUBLIC_BASE_URL = "http://crowdqa.example.org"
    assert "crowdqa.W002" in {m.id for m in run_checks(include_deployment_checks=True)}


def test_attention_rule__cites_the_platforms_whose_policy_the_default_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    following = [t for t in platform_traits() if t.attention_failures_to_reject == DEFAULT_ATTENTION_FAILURES]
    assert following, "the default follows some platform's policy, or its help text says whose"
    assert attention_default_rule() == f"{named(following, 'and')}'s rule"
    monkeypatch.setattr(ProlificTraits, "attention_failures_to_reject", DEFAULT_ATTENTION_FAILURES + 1)
    assert attention_default_rule() == ""


def test_manage_workers__platform_choices_are_the_stored_values() -> None:
    parser = _parser("manage_workers")
    [action] = [a for a in parser._actions if "--platform" in a.option_strings]
    assert list(action.choices) == Platform.values()
    with pytest.raises(CommandError, match="invalid choice"):
        argv = ["--block", "--worker", "W1", "--platform", "nowhere"]
        call_command("manage_workers", *argv, stdout=StringIO())


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("launch_batch", None),
        ("sync_batches", None),
        ("resolve_payments", None),
        ("review_batch", "--category"),
    ],
)
def test_command_help__names_the_platforms_from_their_traits(command: str, option: str | None) -> None:
    parser = _parser(command)
    text = parser.description if option is None else _help(parser, option)
    wanted = {
        "launch_batch": arriving(),
        "sync_batches": arriving(),
        "resolve_payments": [t for t in platform_traits() if t.bonus_record_readable],
        "review_batch": [t for t in platform_traits() if t.rejection_categories],
    }[command]
    assert wanted and all(t.short_name in text for t in wanted), text


def _parser(command: str) -> Any:
    from django.core.management import get_commands, load_command_class

    return load_command_class(get_commands()[command], command).create_parser("manage.py", command)


def _help(parser: Any, option: str) -> str:
    return next(a.help for a in parser._actions if option in a.option_strings)
