"""annotation/batch_options.py: the schema ``Batch.save`` checks ``Batch.options`` against."""

from __future__ import annotations

import pytest

from annotation.batch_options import BatchOptionsError, batch_options, check_batch_options
from annotation.platforms import Platform, PlatformOption

PLATFORM_STATE_KEYS = (
    "published",
    "publish_started",
    "publish_ref",
    "mturk_expired",
    "needs_attention",
    "screening_qualification",
    "budget_stopped",
)
"""Keys that moved to crowd.models.BatchPlatformState: a write of one of them is refused by name."""


def test_options_every_writer_produces_pass() -> None:
    check_batch_options(
        {
            "required_qualification": "screened-3",
            "require_qualification_ids": ["3QUAL"],
            "exclude_qualification_ids": ["3OTHER"],
            "min_approval_rate": 98.5,
            "min_approved": 100,
            "locales": ["US", "GB"],
            "prolific_filters": [{"filter_id": "approval_rate", "selected_range": {"lower": 95}}],
            "quiz": {"n": 3, "seed": 0, "by_document": {"12": [{"question": "q", "answer": "a"}]}},
            "expected_bonus_cents": 0,
            "stage2_assignments": 2,
            "stage2_reward_cents": 40,
            "release_path": "/releases/x-1.0",
            "split": "test",
            "sample": 5,
            "seed": 1,
            "items": ["a", "b"],
        }
    )


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"release_pth": "/x"}, "unknown key 'release_pth'"),
        ({"min_approved": "100"}, "'min_approved'] must be a whole number >= 0"),
        ({"min_approved": True}, "'min_approved'] must be a whole number >= 0"),
        ({"min_approval_rate": 101}, "'min_approval_rate'] must be a number from 0 to 100"),
        ({"require_qualification_ids": "3QUAL"}, "'require_qualification_ids'] must be a list of strings"),
        ({"quiz": {"n": 3, "seed": 0}}, "'quiz'] must be an object"),
        ({"quiz": {"n": 3, "seed": 0, "by_document": {}, "by": "x"}}, "'quiz'] must be an object"),
        ({"items": ["a", 2]}, "'items'] must be a list of strings"),
        ({"seed": None}, "'seed'] must be a whole number, not None"),
        ({"min_approval_rate": False}, "'min_approval_rate'] must be a number from 0 to 100"),
        ({"prolific_filters": {"filter_id": "age"}}, "'prolific_filters'] must be a list of objects"),
        *(({key: "x"}, f"unknown key {key!r}") for key in PLATFORM_STATE_KEYS),
    ],
)
def test_options_unknown_key_or_wrong_shape_is_refused_by_name(options: dict, names: str) -> None:
    with pytest.raises(BatchOptionsError, match=names.replace("[", r"\[").replace("]", r"\]")):
        check_batch_options(options)


def test_options_must_be_an_object() -> None:
    with pytest.raises(BatchOptionsError, match="must be an object, not list"):
        check_batch_options(["quiz"])


def test_every_key_says_what_it_is_for() -> None:
    assert all(spec.meaning and spec.expected for spec in batch_options().values())


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> type[Platform]:
    """The platform registry, restored after the test."""
    monkeypatch.setattr(Platform, "_labels", dict(Platform._labels))
    monkeypatch.setattr(Platform, "_options", dict(Platform._options))
    return Platform


def test_platform_options__come_from_the_registered_platforms(registry: type[Platform]) -> None:
    """A platform's own launch settings are the schema's once its package registered them (crowd.apps)."""
    assert "prolific_filters" in batch_options()
    registry.register("elsewhere", "Elsewhere", {"cohort": PlatformOption(str, "a string", "the cohort")})
    check_batch_options({"cohort": "2026", "prolific_filters": []})
    assert batch_options()["cohort"].meaning == "the cohort"
    with pytest.raises(BatchOptionsError, match="'cohort'] must be a string, not 3"):
        check_batch_options({"cohort": 3})
    assert ("elsewhere", "Elsewhere") in registry.choices() and registry.label("elsewhere") == "Elsewhere"

    registry._options.clear()  # no platform registered: their keys are unknown
    with pytest.raises(BatchOptionsError, match="unknown key 'prolific_filters'"):
        check_batch_options({"prolific_filters": []})


def test_platform_options__two_platforms_may_not_declare_one_key(registry: type[Platform]) -> None:
    option = PlatformOption(str, "a string", "x")
    registry.register("one", "One", {"shared": option})
    registry.register("one", "One again", {"shared": option})  # a platform registered again: updated
    assert registry.label("one") == "One again"
    with pytest.raises(ValueError, match="platform 'one' already declares launch setting 'shared'"):
        registry.register("two", "Two", {"shared": option})
