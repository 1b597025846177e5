"""Entry point of heuristic QC for ``run_qc``: parse JSON lines, dispatch by style, emit result dicts.

Why one dispatcher: ``manage.py run_qc --input QA.jsonl --json`` accepts SyllabusQA-style and SciQ-style
lines in one file (docs/reference/commands.md, ``run_qc``); parsing errors name the line and field so
a researcher can fix the file.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from annotation.qc.sciq import SciQItem, SciQOptions, check_item
from annotation.qc.syllabusqa import SyllabusQAOptions, SyllabusQAPair, check_pairs
from annotation.spans import NormalizedDocument

logger = logging.getLogger(__name__)


def _strings(value: Any, where: str, name: str) -> tuple[str, ...]:
    """A JSON list of strings (None allowed as an empty item) as a tuple."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(v is None or isinstance(v, str) for v in value):
        raise ValueError(f"{where}: field '{name}' must be a list of strings, got {value!r}")
    return tuple(v or "" for v in value)


def _text(record: Mapping[str, Any], name: str, where: str, required: bool = True) -> str:
    """A string field (numbers are accepted for ``id``)."""
    value = record.get(name)
    if value is None:
        if required:
            raise ValueError(f"{where}: missing field '{name}'")
        return ""
    if isinstance(value, int | float) and name == "id":
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field '{name}' must be a string, got {value!r}")
    return value


def parse_record(record: Mapping[str, Any], where: str = "record") -> SyllabusQAPair | SciQItem:
    """Turn one ``run_qc`` input object into a SyllabusQA pair or a SciQ item.

    Args:
        record: the decoded JSON object.
        where: location for error messages, e.g. ``"QA.jsonl line 3"``.

    Returns:
        A :class:`SyllabusQAPair` when the record has ``question_type``, else a :class:`SciQItem`.

    Raises:
        ValueError: naming the location and field when a field is missing or of the wrong type.
    """
    if not isinstance(record, Mapping):
        raise ValueError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "question_type" in record:
        return SyllabusQAPair(
            id=_text(record, "id", where),
            syllabus_name=_text(record, "syllabus_name", where),
            question_type=_text(record, "question_type", where),
            question=_text(record, "question", where),
            answer=_text(record, "answer", where, required=False),
            answer_spans=_strings(record.get("answer_spans"), where, "answer_spans"),
            reasoning_steps=_strings(record.get("reasoning_steps"), where, "reasoning_steps"),
            worker_id=_text(record, "worker_id", where, required=False) or None,
        )
    worker = record.get("worker_distractors")
    return SciQItem(
        id=_text(record, "id", where),
        question=_text(record, "question", where),
        answer=_text(record, "answer", where),
        passage=_text(record, "passage", where, required=False),
        distractors=_strings(record.get("distractors"), where, "distractors"),
        worker_distractors=None if worker is None else _strings(worker, where, "worker_distractors"),
    )


def run_qc(
    records: Iterable[SyllabusQAPair | SciQItem],
    documents: Mapping[str, str | NormalizedDocument],
    syllabus_options: Optional[SyllabusQAOptions] = None,
    sciq_options: Optional[SciQOptions] = None,
) -> list[dict[str, Any]]:
    """QC a mixed batch; one output dict per record, in input order.

    Args:
        records: parsed records (see :func:`parse_record`).
        documents: syllabus text by name for the SyllabusQA pairs (missing ones skip the span check).
        syllabus_options: SyllabusQA thresholds and caps.
        sciq_options: SciQ thresholds.

    Returns:
        Dicts ``{"id", "flags", "normalized_answer", ...}``; SyllabusQA ones add ``answer_spans``
        (repaired text and offsets) and both add ``issues`` (code, severity, field, message).
    """
    records = list(records)
    syllabus_indices = [i for i, r in enumerate(records) if isinstance(r, SyllabusQAPair)]
    out: list[dict[str, Any]] = [{} for _ in records]
    syllabus_results = check_pairs([records[i] for i in syllabus_indices], documents, syllabus_options)
    for i, result in zip(syllabus_indices, syllabus_results, strict=True):
        out[i] = result.to_dict()
    for i, record in enumerate(records):
        if isinstance(record, SciQItem):
            out[i] = check_item(record, sciq_options).to_dict()
    logger.info("QC of %d records (%d SyllabusQA)", len(records), len(syllabus_indices))
    return out
