"""A pair's model-in-the-loop check (issue 32) as release fields.

The check is recorded while the pair is collected (:class:`annotation.models.ModelCheck`); a release
carries it in JSONL and Parquet as flat ``model_*`` fields (record extras; the SyllabusQA CSV keeps the
original schema), and the dataset card reports the per-type rates from them
(:mod:`exports.statistics`). A release without checked pairs has no such fields.
"""

from __future__ import annotations

from annotation.models import QAPair
from exports.records import ExtraValue

#: The release fields of a check, in the order the docs list them.
MODEL_FIELDS = (
    "model_system",
    "model_version",
    "model_answer",
    "model_abstained",
    "model_judge",
    "model_verdict",
    "model_score",
    "model_latency_ms",
    "model_validation",
)


def model_fields(qa: QAPair) -> dict[str, ExtraValue]:
    """The pair's model-in-the-loop check as release fields (JSONL and Parquet; none without a check).

    ``model_system``, ``model_version``, ``model_answer`` (the system's answer, or the no-answer text
    when it abstained), ``model_abstained``, ``model_judge``, ``model_verdict`` (``fooled`` or
    ``matched``), ``model_score`` (the judge's, 0 to 1), ``model_latency_ms`` and ``model_validation``
    (``confirmed`` or ``disputed`` by a second worker, empty while a "fooled" verdict is not validated
    or for a "matched" one).
    """
    check = getattr(qa, "model_check", None)
    if check is None:
        return {}
    return {
        "model_system": check.system,
        "model_version": check.model_version,
        "model_answer": check.model_answer,
        "model_abstained": check.abstained,
        "model_judge": check.judge,
        "model_verdict": check.verdict,
        "model_score": float(check.score),
        "model_latency_ms": float(check.latency_ms),
        "model_validation": check.validation,
    }


def options_only_fields(qa: QAPair) -> dict[str, ExtraValue]:
    """The SciQ artifact check of a multiple-choice pair as release fields (none when it was not checked).

    ``options_only_model`` (the scoring model) and ``options_only_answered`` (True when the model picked
    the correct answer from the options alone, without the passage, for some validator's item).
    """
    checks = list(qa.options_only_checks.all())
    if not checks:
        return {}
    return {
        "options_only_model": checks[0].model_version,
        "options_only_answered": any(c.answered for c in checks),
    }
