"""The schema of ``Batch.options``: every key a batch may keep there, with the shape of its value.

Why: three apps read and write these keys (the launch form and command, the platform life cycle and
sync, expert batches). A key written with a typo or a value of the wrong shape would otherwise be found
only when a later step reads it (a sync that cannot rebuild the published batch, a stage-2 batch that
silently loses its worker requirements). ``Batch.save`` checks the options against this table, so such a
write fails where it happens, naming the key.

Pure: no Django import.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

Check = Callable[[Any], bool]


class BatchOptionsError(ValueError):
    """``Batch.options`` holds an unknown key or a value of the wrong shape."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool)


def _is_timestamp(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_percent(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 100


def _list_of(check: Check) -> Check:
    """A JSON array (a tuple too: ``dataclasses.asdict`` keeps tuples, which JSON stores as arrays)."""

    def checked(value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(check(item) for item in value)

    return checked


def _object(required: Mapping[str, Check], optional: Optional[Mapping[str, Check]] = None) -> Check:
    """A JSON object with ``required`` keys (and ``optional`` ones), each value passing its check."""
    known = {**required, **(optional or {})}

    def checked(value: Any) -> bool:
        if not isinstance(value, dict) or not set(required) <= set(value):
            return False
        return all(key in known and known[key](item) for key, item in value.items())

    return checked


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


@dataclass(frozen=True)
class OptionKey:
    """One key of ``Batch.options``: the shape of its value (``expected``, in words) and what it is for."""

    check: Check
    expected: str
    meaning: str


_PUBLISHED_UNIT = _object({"local_ref": _is_str, "platform_id": _is_str})

BATCH_OPTIONS: dict[str, OptionKey] = {
    # Worker requirements, set at launch (qualification_options) and inherited by a stage-2 batch.
    "required_qualification": OptionKey(
        _is_str, "a string", "the local qualification a worker needs (a screening batch grants it)"
    ),
    "require_qualification_ids": OptionKey(
        _list_of(_is_str), "a list of strings", "platform qualifications a worker must hold"
    ),
    "exclude_qualification_ids": OptionKey(
        _list_of(_is_str), "a list of strings", "platform qualifications that keep a worker out"
    ),
    "locales": OptionKey(_list_of(_is_str), "a list of strings", "countries a worker must be in (MTurk)"),
    "min_approval_rate": OptionKey(_is_percent, "a number from 0 to 100", "the workers' approval rate"),
    "min_approved": OptionKey(_is_count, "a whole number >= 0", "the workers' approved HITs"),
    "prolific_filters": OptionKey(_list_of(_is_dict), "a list of objects", "Prolific eligibility filters"),
    "keywords": OptionKey(_list_of(_is_str), "a list of strings", "search keywords shown on the platform"),
    "expected_bonus_cents": OptionKey(_is_count, "a whole number >= 0", "bonuses counted in the estimate"),
    # Screening batches.
    "grants_qualification": OptionKey(_is_str, "a string", "the local qualification approval grants"),
    "screening_qualification": OptionKey(
        _is_str, "a string", "the platform qualification created for the screening batch"
    ),
    "quiz": OptionKey(
        _object({"n": _is_count, "seed": _is_int, "by_document": _is_dict}),
        'an object {"n", "seed", "by_document"}',
        "the known-answer questions chosen for each HIT's syllabus",
    ),
    # A stage-1 batch's settings for the stage-2 batch that validates its questions.
    "stage2_assignments": OptionKey(_is_count, "a whole number >= 0", "validators per stage-2 question"),
    "stage2_reward_cents": OptionKey(_is_count, "a whole number >= 0", "the stage-2 reward per HIT"),
    # The platform life cycle.
    "publish_started": OptionKey(
        _is_timestamp, "an ISO 8601 timestamp", "when a publish that is not safe to retry was started"
    ),
    "published": OptionKey(
        _object(
            {
                "provider": _is_str,
                "batch_ref": _is_str,
                "platform_batch_id": _is_str,
                "units": _list_of(_PUBLISHED_UNIT),
            },
            {"sandbox": _is_bool, "completion_code": _is_str, "preview_url": _is_str},
        ),
        "a published batch (crowd.providers.base.PublishedBatch as an object)",
        "the platform references every later platform call rebuilds",
    ),
    "completion_code": OptionKey(_is_str, "a string", "the code a Prolific participant returns with"),
    "mturk_expired": OptionKey(
        _is_bool, "true or false", "the batch was stopped for good on its platform (MTurk HITs expired)"
    ),
    "budget_stopped": OptionKey(
        _is_timestamp, "an ISO 8601 timestamp", "when the batch was paused for reaching its budget cap"
    ),
    "needs_attention": OptionKey(
        _object({"reason": _is_str, "at": _is_timestamp}),
        'an object {"reason", "at"}',
        "why sync stopped on this batch (its HITs or study are gone)",
    ),
    # Expert-answer batches (create_expert_batch): which release questions they sample.
    "release_path": OptionKey(_is_str, "a string", "the release folder the questions were read from"),
    "split": OptionKey(_is_str, "a string", "the release split sampled"),
    "sample": OptionKey(_is_count, "a whole number >= 0", "how many questions were asked for"),
    "seed": OptionKey(_is_int, "a whole number", "the sampling seed"),
    "items": OptionKey(_list_of(_is_str), "a list of strings", "the sampled release item ids"),
}


def check_batch_options(options: Any) -> None:
    """Refuse options that are not an object of known keys with values of the documented shapes.

    Raises:
        BatchOptionsError: names the first unknown key or wrong value, and what was expected.
    """
    if not isinstance(options, dict):
        raise BatchOptionsError(f"Batch.options must be an object, not {type(options).__name__}")
    for key, value in options.items():
        spec = BATCH_OPTIONS.get(key)
        if spec is None:
            raise BatchOptionsError(
                f"Batch.options has an unknown key {key!r}; known keys: {', '.join(sorted(BATCH_OPTIONS))}"
            )
        if not spec.check(value):
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise BatchOptionsError(f"Batch.options[{key!r}] must be {spec.expected}, not {shown}")
