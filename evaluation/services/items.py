"""Read one split of a release into :class:`~evaluation.schema.QAItem` objects, syllabus text attached.

A SyllabusQA-style release has ``<split>.csv`` (the original 15 columns) and/or ``<split>.jsonl`` (span
and step lists) at its root (exports/release.py). The release stores only the syllabus *name*; the text
is looked up among imported documents, as ``run_qc`` does, so the syllabi must be imported first.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Optional

from annotation.importers.errors import ImportDataError
from annotation.importers.syllabusqa_csv import QA_COLUMNS, read_split_csv
from annotation.question_types import SPLITS
from evaluation.schema import QAItem

logger = logging.getLogger(__name__)

#: How a run reads the syllabus texts. ``mac_roman``: as imported (the faithful reading of the release's
#: Mac Roman files). ``iso-8859-1``: the same bytes read as ISO-8859-1, which is what the SyllabusQA
#: authors' ``load_syllabi`` does (curly quotes, dashes and bullets become other characters), to compare
#: with their published figures.
SYLLABUS_DECODINGS: tuple[str, ...] = ("mac_roman", "iso-8859-1")
DEFAULT_SYLLABUS_DECODING = "mac_roman"


class BenchmarkInputError(ValueError):
    """A release split cannot be turned into benchmark items (missing file, column or syllabus)."""


def read_split_rows(release_dir: Path, split: str) -> list[dict[str, Any]]:
    """Return the rows of ``split`` as dicts with ``reasoning_steps`` as a list.

    Prefers ``<split>.csv`` (the original SyllabusQA schema) and falls back to ``<split>.jsonl``.

    Args:
        release_dir: the release directory.
        split: ``train``, ``val`` or ``test``.

    Returns:
        One dict per row: id, syllabus_name, question_type, question, answer, reasoning_steps.

    Raises:
        BenchmarkInputError: unknown split, no file for it (e.g. an MCQ release), a missing column
            (names the file and the column), or a CSV that is not UTF-8 or not CSV (names the line).
    """
    if split not in SPLITS:
        raise BenchmarkInputError(f"split '{split}': choose from {', '.join(SPLITS)}")
    csv_path, jsonl_path = release_dir / f"{split}.csv", release_dir / f"{split}.jsonl"
    if csv_path.is_file():
        try:
            qa_rows = read_split_csv(csv_path, columns=QA_COLUMNS)
        except ImportDataError as error:
            where = f"{csv_path} line {error.line}" if error.line else str(csv_path)
            raise BenchmarkInputError(f"{where}: {error.problem}") from error
        return [
            {
                "id": row.id,
                "syllabus_name": row.syllabus_name,
                "question_type": row.question_type,
                "question": row.question,
                "answer": row.answer,
                "reasoning_steps": [step for step in row.steps if step],
            }
            for row in qa_rows
        ]
    if jsonl_path.is_file():
        rows: list[dict[str, Any]] = []
        with jsonl_path.open(encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as error:
                    raise BenchmarkInputError(
                        f"{jsonl_path} line {line_no}: not JSON ({error.msg})"
                    ) from error
                missing = [c for c in QA_COLUMNS if c not in data]
                if missing:
                    raise BenchmarkInputError(
                        f"{jsonl_path} line {line_no}: missing field(s) {', '.join(missing)}"
                    )
                rows.append(
                    {
                        **{c: data[c] or "" for c in QA_COLUMNS},
                        "reasoning_steps": [s for s in data.get("reasoning_steps") or [] if s],
                    }
                )
        return rows
    raise BenchmarkInputError(
        f"{release_dir}: no {split}.csv or {split}.jsonl (benchmarks need a SyllabusQA-style QA release)"
    )


def rows_to_items(
    rows: list[dict[str, Any]], documents: dict[str, str], limit: Optional[int] = None
) -> list[QAItem]:
    """Attach syllabus texts to rows and return the first ``limit`` items.

    Args:
        rows: output of :func:`read_split_rows`.
        documents: syllabus name -> text.
        limit: keep only the first N rows (None keeps all).

    Returns:
        The items, in file order.

    Raises:
        BenchmarkInputError: naming every syllabus of the kept rows that has no text.
    """
    kept = rows if limit is None else rows[:limit]
    missing = sorted({r["syllabus_name"] for r in kept} - set(documents))
    if missing:
        raise BenchmarkInputError(
            f"{len(missing)} syllabus(es) not imported: {', '.join(missing)} "
            "(import them first, e.g. manage.py import_syllabusqa DIR)"
        )
    return [
        QAItem(
            id=r["id"],
            question=r["question"],
            answer=r["answer"],
            question_type=r["question_type"] or None,
            document_name=r["syllabus_name"],
            document=documents[r["syllabus_name"]],
            reasoning_steps=tuple(r["reasoning_steps"]),
        )
        for r in kept
    ]


def read_syllabus_as(text: str, decoding: str) -> str:
    """Return an imported syllabus text as ``decoding`` reads the original file (see SYLLABUS_DECODINGS).

    The import decoded the Mac Roman bytes (line ends made LF); encoding back to Mac Roman gives those
    bytes again, and reading them as ISO-8859-1 gives the authors' text, line ends included (their
    ``open()`` turns CR into LF too). A text Mac Roman cannot hold (a corpus imported from UTF-8) has no
    such reading and is returned unchanged.

    Raises:
        BenchmarkInputError: an unknown decoding.
    """
    if decoding not in SYLLABUS_DECODINGS:
        raise BenchmarkInputError(
            f"syllabus decoding '{decoding}': choose from {', '.join(SYLLABUS_DECODINGS)}"
        )
    if decoding == "mac_roman":
        return text
    from exports.original_formats import to_mojibake

    return to_mojibake(text)


def load_split_items(
    release_dir: Path,
    split: str,
    limit: Optional[int] = None,
    decoding: str = DEFAULT_SYLLABUS_DECODING,
) -> list[QAItem]:
    """Read a release split and attach the imported syllabus texts (``annotation.Document`` by name).

    When several corpora hold a document of the same name, the most recently imported one wins (a
    warning names it).

    Args:
        release_dir: the release directory.
        split: ``train``, ``val`` or ``test``.
        limit: keep only the first N rows.
        decoding: how the syllabus texts are read (:data:`SYLLABUS_DECODINGS`).

    Raises:
        BenchmarkInputError: see :func:`read_split_rows` and :func:`rows_to_items`, or an unknown decoding.
    """
    from annotation.models import Document

    read_syllabus_as("", decoding)  # refuse an unknown decoding before touching the database
    rows = read_split_rows(release_dir, split)
    kept = rows if limit is None else rows[:limit]
    names = {r["syllabus_name"] for r in kept}
    documents: dict[str, str] = {}
    for name, text in Document.objects.filter(name__in=names).order_by("pk").values_list("name", "text"):
        if name in documents and documents[name] != text:
            logger.warning("several imported documents are named %r; using the latest", name)
        documents[name] = text
    return rows_to_items(rows, {n: read_syllabus_as(t, decoding) for n, t in documents.items()}, limit)
