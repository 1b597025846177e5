"""annotation/batch_options.py: the schema ``Batch.save`` checks ``Batch.options`` against."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from annotation.batch_options import BATCH_OPTIONS, BatchOptionsError, check_batch_options
from crowd.providers.base import PublishedBatch, PublishedUnit


def test_options_every_writer_produces_pass() -> None:
    published = PublishedBatch(
        provider="mturk",
        batch_ref="7",
        platform_batch_id="3TYPE",
        units=(PublishedUnit(local_ref="1", platform_id="3HIT"),),
        completion_code="",
    )
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
            "published": asdict(published),
            "publish_started": "2026-11-26T06:00:00+00:00",
            "needs_attention": {"reason": "the study is gone", "at": "2026-11-26T06:00:00+00:00"},
            "expected_bonus_cents": 0,
            "mturk_expired": True,
            "stage2_assignments": 2,
            "stage2_reward_cents": 40,
            "budget_stopped": "2026-11-26T06:00:00+00:00",
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
        ({"published": {"provider": "mturk", "units": []}}, "'published'] must be a published batch"),
        ({"needs_attention": {"reason": "gone", "at": "yesterday"}}, "'needs_attention'] must be an object"),
        ({"publish_started": "soon"}, "'publish_started'] must be an ISO 8601 timestamp"),
        ({"items": ["a", 2]}, "'items'] must be a list of strings"),
        ({"seed": None}, "'seed'] must be a whole number, not None"),
        ({"min_approval_rate": False}, "'min_approval_rate'] must be a number from 0 to 100"),
        ({"needs_attention": {"reason": "gone", "at": "2026-11-26", "by": "x"}}, "'needs_attention'] must be"),
    ],
)
def test_options_unknown_key_or_wrong_shape_is_refused_by_name(options: dict, names: str) -> None:
    with pytest.raises(BatchOptionsError, match=names.replace("[", r"\[").replace("]", r"\]")):
        check_batch_options(options)


def test_options_must_be_an_object() -> None:
    with pytest.raises(BatchOptionsError, match="must be an object, not list"):
        check_batch_options(["quiz"])


def test_every_key_says_what_it_is_for() -> None:
    assert all(spec.meaning and spec.expected for spec in BATCH_OPTIONS.values())
