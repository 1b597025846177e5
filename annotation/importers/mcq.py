"""Readers of multiple-choice science datasets: SciQ (JSON) and ARC (JSONL).

Both become :class:`MCQRow`: a question, its correct answer, its distractors in release order and,
for SciQ, the supporting passage (1,427 SciQ questions have none: the text could not be released).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from annotation.importers.errors import ImportDataError

#: split -> SciQ's file name (its releases and crowdqa's ``sciq/`` copy alike).
SCIQ_FILES: Mapping[str, str] = {"train": "train.json", "val": "valid.json", "test": "test.json"}
SCIQ_FIELDS = ("question", "distractor1", "distractor2", "distractor3", "correct_answer", "support")
ARC_SPLITS = (("train", "Train"), ("val", "Dev"), ("test", "Test"))


@dataclass(frozen=True)
class MCQRow:
    """One multiple-choice question as a source dataset (SciQ, ARC) releases it: the importers' input.

    Like :class:`~annotation.importers.syllabusqa_csv.QARow` for SyllabusQA, it is what a published file
    says, split included; what crowdqa releases is :class:`exports.records.MCQRecord` (a grouping key
    and a worker pseudonym, no source split).
    """

    id: str
    split: str
    question: str
    answer: str
    distractors: tuple[str, ...]
    passage: str = ""
    metadata: dict = field(default_factory=dict)


def read_sciq(root: Path, splits: tuple[str, ...] = ("train", "val", "test")) -> list[MCQRow]:
    """Read SciQ's ``train.json``, ``valid.json`` and ``test.json`` (or the ``splits`` named).

    SciQ has no ids, so each record's id is ``sciq-<split>-<index>`` (stable for the official files).

    Raises:
        ImportDataError: for a missing file, invalid JSON, or a record lacking a field.
    """
    records: list[MCQRow] = []
    for split, filename in SCIQ_FILES.items():
        if split not in splits:
            continue
        path = root / filename
        if not path.is_file():
            raise ImportDataError(path, "file not found")
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ImportDataError(path, f"not valid UTF-8 JSON ({exc})") from exc
        if not isinstance(items, list):
            raise ImportDataError(path, "expected a JSON array of questions")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ImportDataError(
                    path, f"record {index}: expected a JSON object, not {type(item).__name__}"
                )
            missing = [f for f in SCIQ_FIELDS if not isinstance(item.get(f), str)]
            if missing:
                raise ImportDataError(path, f"record {index}: missing field(s) {', '.join(missing)}")
            if not item["question"].strip() or not item["correct_answer"].strip():
                raise ImportDataError(path, f"record {index}: empty question or correct_answer")
            records.append(
                MCQRow(
                    id=f"sciq-{split}-{index}",
                    split=split,
                    question=item["question"],
                    answer=item["correct_answer"],
                    distractors=(item["distractor1"], item["distractor2"], item["distractor3"]),
                    passage=item["support"],
                    metadata={"source_row": index},
                )
            )
    return records


ARC_SUBSETS = ("ARC-Easy", "ARC-Challenge")


def _arc_files(
    root: Path, subsets: tuple[str, ...], splits: tuple[str, ...]
) -> Iterator[tuple[str, str, Path]]:
    for subset in subsets:
        for split, suffix in ARC_SPLITS:
            if split in splits:
                yield subset, split, root / subset / f"{subset}-{suffix}.jsonl"


def read_arc(
    root: Path, subsets: tuple[str, ...] = ARC_SUBSETS, splits: tuple[str, ...] = ("train", "val", "test")
) -> list[MCQRow]:
    """Read ARC-Easy and ARC-Challenge JSONL files (7,787 real grade-school exam questions).

    Raises:
        ImportDataError: for a missing file, invalid JSON, or an answer key not among the choices.
    """
    records: list[MCQRow] = []
    for subset, split, path in _arc_files(root, subsets, splits):
        if not path.is_file():
            raise ImportDataError(path, "file not found")
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise ImportDataError(path, f"not UTF-8 (byte 0x{data[exc.start]:02x})", line=line) from exc
        for line_no, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                records.append(_arc_row(path, line_no, line, subset, split))
    return records


def _arc_row(path: Path, line_no: int, line: str, subset: str, split: str) -> MCQRow:
    """One ARC JSONL line as a row; every malformed shape is an ImportDataError naming the line."""
    try:
        item = json.loads(line)
        stem = item["question"]["stem"]
        choices = item["question"]["choices"]
        key = item["answerKey"]
        qid = item["id"]
        labels = [c["label"] for c in choices]
        texts = [c["text"] for c in choices]
    except (json.JSONDecodeError, KeyError, TypeError, IndexError) as exc:
        raise ImportDataError(
            path, f"malformed question ({type(exc).__name__}: {exc})", line=line_no
        ) from exc
    strings = [stem, key, qid, *labels, *texts]
    if not all(isinstance(value, str) for value in strings) or not stem.strip() or not qid.strip():
        raise ImportDataError(
            path, "the id, stem, answerKey and every choice must be non-empty text", line_no
        )
    if key not in labels:
        raise ImportDataError(path, f"answerKey '{key}' not among choices {labels} of '{qid}'", line_no)
    answer = texts[labels.index(key)]
    return MCQRow(
        id=qid,
        split=split,
        question=stem,
        answer=answer,
        distractors=tuple(t for label, t in zip(labels, texts, strict=True) if label != key),
        metadata={"subset": subset, "answer_key": key, "labels": labels},
    )
