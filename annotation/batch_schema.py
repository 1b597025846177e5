"""The pydantic model of ``Batch.options`` (:class:`BatchOptions`), used by :mod:`annotation.batch_options`.

Why a module of its own: pydantic costs a web worker about 5 MB and the HIT pages and submits never
write ``Batch.options``; :mod:`annotation.batch_options` (which ``Batch.save`` calls) imports this module
only when options are checked or described. No Django import.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    create_model,
)

from annotation.batch_options import MAX_AUTO_APPROVE_SECONDS
from annotation.platforms import PlatformOption

Count = Annotated[StrictInt, Field(ge=0)]
Percent = Annotated[Union[StrictInt, StrictFloat], Field(ge=0, le=100)]
AutoApproveSeconds = Annotated[StrictInt, Field(ge=0, le=MAX_AUTO_APPROVE_SECONDS)]
Strings = list[StrictStr]
"""A JSON array of strings (a tuple too: ``dataclasses.asdict`` keeps tuples, which JSON stores as arrays)."""


class _Object(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Quiz(_Object):
    n: Count
    seed: StrictInt
    by_document: dict[str, Any]


class ModelLoop(_Object):
    """The model in the loop of a syllabus batch (issue 32): who answers, who judges, what the card shows.

    ``mode`` ``off`` asks no model; ``show`` puts the model's answer and the judge's verdict on each card
    once its question and answer are written; ``ask`` also invites the worker to rewrite a question the
    model already answers. ``validation`` sends each "fooled" pair to a second worker as soon as its
    submission is checked. The system and judge names are those of :mod:`evaluation.model_in_the_loop`
    (the evaluation app checks them; this module keeps their shape only).
    """

    mode: Literal["off", "show", "ask"]
    system: Literal["search", "rag"] = "search"
    judge: Literal["lexical", "rouge_l", "fact_qa"] = "lexical"
    threshold: Annotated[Union[StrictInt, StrictFloat], Field(ge=0, le=1)] = 0.3
    #: every "fooled" pair goes to the batch's model verdict validation batch as its submission is
    #: checked (a second worker confirms or disputes it); off: the researcher sends them from the page.
    validation: StrictBool = False


def _key(expected: str, meaning: str) -> Any:
    """An optional key: ``expected`` says its shape in words (error messages), ``meaning`` what it is for."""
    return Field(default=None, description=meaning, json_schema_extra={"expected": expected})


class BatchOptions(_Object):
    """Every key ``Batch.options`` may hold but the platforms' own (:func:`schema` adds those); each is
    optional."""

    # Worker requirements, set at launch (qualification_options) and inherited by a stage-2 batch.
    required_qualification: Optional[StrictStr] = _key(
        "a string", "the local qualification a worker needs (a screening batch grants it)"
    )
    require_qualification_ids: Optional[Strings] = _key(
        "a list of strings", "platform qualifications a worker must hold"
    )
    exclude_qualification_ids: Optional[Strings] = _key(
        "a list of strings", "platform qualifications that keep a worker out"
    )
    locales: Optional[Strings] = _key(
        "a list of strings", "countries a worker must be in (on platforms that filter by country)"
    )
    min_approval_rate: Optional[Percent] = _key("a number from 0 to 100", "the workers' approval rate")
    min_approved: Optional[Count] = _key("a whole number >= 0", "the workers' approved HITs")
    keywords: Optional[Strings] = _key("a list of strings", "search keywords shown on the platform")
    expected_bonus_cents: Optional[Count] = _key("a whole number >= 0", "bonuses counted in the estimate")
    floor_wage_cents_per_hour: Optional[Count] = _key(
        "a whole number >= 0",
        "the least pay per hour of active time: approving tops the reward up with a bonus",
    )
    # Gold and attention items served inside a SciQ stage-2 batch (crowd.gold, crowd.services.gold).
    gold_rate: Optional[Percent] = _key(
        "a number from 0 to 100", "gold items served per 100 real HITs (from the items attached)"
    )
    attention_rate: Optional[Percent] = _key(
        "a number from 0 to 100", "attention items served per 100 real HITs (from the items attached)"
    )
    gold_warn_below: Optional[Percent] = _key(
        "a number from 0 to 100", "gold accuracy (percent) under which a worker is flagged"
    )
    gold_block_below: Optional[Percent] = _key(
        "a number from 0 to 100", "gold accuracy (percent) under which a worker is blocked"
    )
    gold_min_answers: Optional[Count] = _key(
        "a whole number >= 0", "gold answers a worker gives before the gold thresholds act (default 5)"
    )
    gold_warn_message: Optional[StrictBool] = _key(
        "true or false",
        "message a worker once when the quality checks first flag them (default true)",
    )
    attention_block_failures: Optional[Count] = _key(
        "a whole number >= 0", "failed attention items that block a worker (default 2; 0: never)"
    )
    auto_approve_seconds: Optional[AutoApproveSeconds] = _key(
        "a whole number of seconds from 0 to 2592000 (30 days)",
        "submitted work nobody reviewed is approved this long after its submission",
    )
    # Screening batches.
    grants_qualification: Optional[StrictStr] = _key("a string", "the local qualification approval grants")
    quiz: Optional[Quiz] = _key(
        'an object {"n", "seed", "by_document"}', "the known-answer questions chosen for each HIT's syllabus"
    )
    # A stage-1 batch's settings for the stage-2 batch that validates its questions.
    stage2_assignments: Optional[Count] = _key("a whole number >= 0", "validators per stage-2 question")
    stage2_reward_cents: Optional[Count] = _key("a whole number >= 0", "the stage-2 reward per HIT")
    # The platform life cycle (its state is crowd.models.BatchPlatformState).
    launch_key: Optional[StrictStr] = _key(
        "a string", "the fingerprint of the launch that made the batch (an identical launch resumes it)"
    )
    completion_code: Optional[StrictStr] = _key(
        "a string", "the completion code a platform that takes one is given at launch (generated when absent)"
    )
    # Syllabus batches: the model answering each card as it is written.
    model_in_the_loop: Optional[ModelLoop] = _key(
        'an object {"mode": "off"|"show"|"ask", "system", "judge", "threshold"}',
        "the model that answers each syllabus card as it is written, and what the card shows",
    )
    # Expert-answer batches (create_expert_batch): which release questions they sample.
    release_path: Optional[StrictStr] = _key("a string", "the release folder the questions were read from")
    split: Optional[StrictStr] = _key("a string", "the release split sampled")
    sample: Optional[Count] = _key("a whole number >= 0", "how many questions were asked for")
    seed: Optional[StrictInt] = _key("a whole number", "the sampling seed")
    items: Optional[Strings] = _key("a list of strings", "the sampled release item ids")


@functools.cache
def with_platform_options(options: tuple[tuple[str, PlatformOption], ...]) -> type[BatchOptions]:
    """:class:`BatchOptions` extended by the platforms' own ``(key, option)`` pairs (built once per set)."""
    if not options:
        return BatchOptions
    fields: dict[str, Any] = {
        key: (Optional[option.annotation], _key(option.expected, option.meaning)) for key, option in options
    }
    return create_model("BatchOptions", __base__=BatchOptions, **fields)
