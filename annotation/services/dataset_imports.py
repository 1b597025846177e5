"""The dataset layouts crowdqa imports, each one function from a folder to a finished import.

The ``import_*`` commands and the browser upload (:mod:`annotation.services.uploads`) both call
:data:`LAYOUTS`, so a dataset is read and checked by the same readers (``annotation.importers``) and
written by the same services however it arrives; there is no second validator. Each function raises
:class:`~annotation.importers.errors.ImportDataError` for malformed input, and nothing is written then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotation.importers.mcq import read_arc, read_sciq
from annotation.models import Corpus
from annotation.services.importing import (
    ImportSummary,
    Progress,
    import_documents,
    import_mcq,
    import_syllabusqa,
)

SCIQ_CORPUS: dict[str, Any] = {
    "kind": Corpus.Kind.TEXTBOOK,
    "description": "SciQ: crowdsourced multiple-choice science questions with textbook support passages.",
    "source": "allenai SciQ (Welbl, Liu & Gardner 2017)",
    "license": "CC BY-NC 3.0",
}
ARC_CORPUS: dict[str, Any] = {
    "kind": Corpus.Kind.EXAM,
    "description": "ARC: real grade-school science exam questions (Easy and Challenge sets).",
    "source": "AI2 Reasoning Challenge V1 Feb-2018",
    "license": "CC BY-SA 4.0",
}


def _quiet(stage: str, done: int, total: int) -> None:
    return None


def import_sciq_dir(root: Path, corpus_name: str = "sciq", progress: Progress = _quiet) -> ImportSummary:
    """SciQ's ``train.json``, ``valid.json`` and ``test.json`` in ``root`` (passages, distractors)."""
    progress("reading", 0, 1)
    records = read_sciq(root)
    progress("reading", 1, 1)
    return import_mcq(records, corpus_name, SCIQ_CORPUS, progress=progress)


def import_arc_dir(root: Path, corpus_name: str = "arc", progress: Progress = _quiet) -> ImportSummary:
    """ARC's ``ARC-Easy/`` and ``ARC-Challenge/`` JSONL files in ``root``: questions and distractors."""
    progress("reading", 0, 1)
    records = read_arc(root)
    progress("reading", 1, 1)
    return import_mcq(records, corpus_name, ARC_CORPUS, progress=progress)


def import_syllabusqa_dir(
    root: Path, corpus_name: str = "syllabusqa", progress: Progress = _quiet, encoding: str = "mac_roman"
) -> ImportSummary:
    """The SyllabusQA release folder ``root``: syllabi (text, PDF, pages) and their QA pairs."""
    return import_syllabusqa(root, corpus_name, encoding, progress=progress)


def import_documents_dir(
    root: Path, corpus_name: str, progress: Progress = _quiet, min_paragraph_chars: int = 40
) -> ImportSummary:
    """The ``.txt``, ``.md`` and ``.pdf`` files in ``root`` (and below), one passage per paragraph."""
    return import_documents(corpus_name, [root], min_paragraph_chars, progress=progress)


def describe(layout: str, result: dict[str, Any]) -> str:
    """The one-sentence summary of an import's ``as_dict()`` that the commands print and the upload's
    page shows."""
    pairs = result.get("qa_pairs") or {}
    if layout == "documents":
        return (
            f"Corpus '{result['corpus']}': {result['documents']['created']} new document(s), "
            f"{result['passages']['created']} new passage(s) from {result['files']} file(s)."
        )
    if layout == "syllabusqa":
        return (
            f"Corpus '{result['corpus']}': {result['syllabi']} syllabi, {result['qa_pairs_total']} QA pairs "
            f"({pairs['created']} new, {pairs['updated']} updated, {pairs['unchanged']} unchanged); "
            f"{result['spans_located']} of {result['spans_total']} answer spans located verbatim in the "
            "syllabus text."
        )
    line = (
        f"Corpus '{result['corpus']}': {result['questions_total']} questions "
        f"({pairs['created']} new, {pairs['unchanged']} unchanged)"
    )
    if layout == "sciq":
        line += f", {result['with_passage']} with a passage, {result['without_passage']} without"
    return line + "."


@dataclass(frozen=True)
class Layout:
    """One importable layout: its label, the corpus kind it fills, and the function that imports it."""

    key: str
    label: str
    kind: str
    default_corpus: str
    run: Callable[..., ImportSummary]


LAYOUTS: dict[str, Layout] = {
    "documents": Layout(
        "documents", "Text, Markdown or PDF documents", Corpus.Kind.GENERIC, "", import_documents_dir
    ),
    "syllabusqa": Layout(
        "syllabusqa", "SyllabusQA release", Corpus.Kind.SYLLABUS, "syllabusqa", import_syllabusqa_dir
    ),
    "sciq": Layout("sciq", "SciQ", Corpus.Kind.TEXTBOOK, "sciq", import_sciq_dir),
    "arc": Layout("arc", "ARC (Easy and Challenge)", Corpus.Kind.EXAM, "arc", import_arc_dir),
}
"""The layouts by key, in the order the upload form offers them."""
