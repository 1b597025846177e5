"""The schema of ``Batch.options``: every key a batch may keep there, with the shape of its value.

Why: three apps read and write these keys (the launch form and command, the platform life cycle and
sync, expert batches). A key written with a typo or a value of the wrong shape would otherwise be found
only when a later step reads it (a sync that cannot rebuild the published batch, a stage-2 batch that
silently loses its worker requirements). ``Batch.save`` checks the options against
:class:`annotation.batch_schema.BatchOptions` (a pydantic model: unknown keys forbidden, strict scalar
types), so such a write fails where it happens, naming the key and what it expects. A platform's own
launch settings (Prolific's eligibility filters) are declared by its package and registered with
:class:`annotation.platforms.Platform`; the schema takes them in (:func:`schema`). The pydantic model
is imported on the first check, not with the models: a web worker serving HIT pages never needs it.
No Django import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.platforms import Platform

if TYPE_CHECKING:
    from annotation.batch_schema import BatchOptions


class BatchOptionsError(ValueError):
    """``Batch.options`` holds an unknown key or a value of the wrong shape."""


MAX_AUTO_APPROVE_SECONDS = 30 * 24 * 3600
"""The longest auto-approval delay a platform takes (30 days: MTurk's ``AutoApprovalDelayInSeconds``)."""

#: What a syllabus card does with the model: nothing, show its answer, or also ask for a harder question.
LOOP_MODES: tuple[str, ...] = ("off", "show", "ask")


@dataclass(frozen=True)
class OptionKey:
    """One key of ``Batch.options``: the shape of its value (``expected``, in words) and what it is for."""

    expected: str
    meaning: str


def schema() -> type[BatchOptions]:
    """:class:`annotation.batch_schema.BatchOptions` with the launch settings of the registered platforms'
    own (pydantic is imported here, on the first check, not with the models)."""
    from annotation.batch_schema import with_platform_options

    return with_platform_options(tuple(Platform.options().items()))


def batch_options() -> Mapping[str, OptionKey]:
    """Each key with its expected shape and meaning, read from :func:`schema`."""
    return {
        name: OptionKey(str((field.json_schema_extra or {})["expected"]), field.description or "")  # type: ignore[index]
        for name, field in schema().model_fields.items()
    }


def check_batch_options(options: Any) -> None:
    """Refuse options that are not an object of known keys with values of the documented shapes.

    A key present with ``null`` is refused too: a batch drops a key rather than storing null.

    Raises:
        BatchOptionsError: names the first unknown key or wrong value, and what was expected.
    """
    if not isinstance(options, dict):
        raise BatchOptionsError(f"Batch.options must be an object, not {type(options).__name__}")
    from pydantic import ValidationError

    try:
        schema().model_validate(options)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0])
        if first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
            known = ", ".join(sorted(batch_options()))
            raise BatchOptionsError(
                f"Batch.options has an unknown key {key!r}; known keys: {known}"
            ) from None
        _refuse(key, options[key])
    for key, value in options.items():
        if value is None:
            _refuse(key, value)


def _refuse(key: str, value: Any) -> None:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise BatchOptionsError(f"Batch.options[{key!r}] must be {batch_options()[key].expected}, not {shown}")
