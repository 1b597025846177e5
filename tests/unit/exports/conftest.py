"""Fixtures for the exports tests: real SyllabusQA and SciQ records, loaded once per session."""

from __future__ import annotations

import csv
import functools
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.importers.mcq import read_sciq
from annotation.importers.syllabusqa_csv import QARow, read_split_csv, split_dir
from annotation.question_types import SPLITS
from exports.records import MCQRecord, QARecord, qa_record_from_qa_row
from exports.statistics import DocumentInfo, count_tokens

# Public office contacts quoted in the real SyllabusQA answers (university help lines), reviewed and
# allowed so that a release of the real data passes the privacy gate.
SYLLABUSQA_QA_CONTACTS = (
    "diversity@umass.edu",
    "examsaccess@admin.umass.edu",
    "gamecockrecovery@sc.edu",
    "413-545-5703",
    "803-777-5781",
    "803-777-6142",
    "803.777.5781",
)
# Public contacts in the syllabus texts a release carries in the authors' syllabi/ layout.
SYLLABI_TEXT_CONTACTS = (
    "(614) 292-5766",
    "413-545-0892",
    "413-545-2337",
    "614-292-3307",
    "6078a2e76c2cfc6da9c6b949",  # a web site's path segment in a reading-list URL
    "TitleIXCoordinator@umass.edu",
    "equity@osu.edu",
    "ore-mailtoLearning-support@ufl.edu",
    "slds@osu.edu",
    "titleix@osu.edu",
)
SYLLABUSQA_PUBLIC_CONTACTS = SYLLABUSQA_QA_CONTACTS + SYLLABI_TEXT_CONTACTS


@functools.lru_cache(maxsize=2)
def _syllabusqa_rows(root: Path) -> dict[str, tuple[QARow, ...]]:
    folder = split_dir(root)
    return {split: tuple(read_split_csv(folder / f"{split}.csv")) for split in SPLITS}


@functools.lru_cache(maxsize=2)
def _sciq_records(root: Path) -> tuple[MCQRecord, ...]:
    return tuple(
        MCQRecord(
            id=row.id,
            question=row.question,
            correct_answer=row.answer,
            distractors=row.distractors,
            support=row.passage,
            document_id="p-" + hashlib.sha1(row.passage.encode("utf-8")).hexdigest()[:16]
            if row.passage.strip()
            else "",
        )
        for row in read_sciq(root)
    )


@functools.lru_cache(maxsize=2)
def _syllabus_documents(root: Path) -> dict[str, DocumentInfo]:
    syllabi = root / "syllabi"
    docs = {}
    with (syllabi / "syllabi_meta_info.utf8.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            text = syllabi / "syllabi_redacted" / "text_utf8" / f"{row['name']}.txt"
            tokens = count_tokens(text.read_text(encoding="utf-8")) if text.exists() else None
            docs[row["name"]] = DocumentInfo(pages=int(row["num_pages"]), tokens=tokens)
    return docs


@pytest.fixture
def syllabusqa_root(shared_data: Callable[[str], Path]) -> Path:
    """The real SyllabusQA folder."""
    return shared_data("syllabusqa")


@pytest.fixture
def syllabusqa_rows(syllabusqa_root: Path) -> dict[str, tuple[QARow, ...]]:
    """split -> the rows of the original split CSV, in file order."""
    return _syllabusqa_rows(syllabusqa_root)


@pytest.fixture
def syllabusqa_records(syllabusqa_rows: dict[str, tuple[QARow, ...]]) -> list[QARecord]:
    """All 5,078 real SyllabusQA QA pairs as records."""
    return [qa_record_from_qa_row(row) for split in SPLITS for row in syllabusqa_rows[split]]


@pytest.fixture
def syllabus_documents(syllabusqa_root: Path) -> dict[str, DocumentInfo]:
    """Syllabus name -> pages (metadata CSV) and tokens (UTF-8 text)."""
    return _syllabus_documents(syllabusqa_root)


@pytest.fixture
def sciq_records(shared_data: Callable[[str], Path]) -> list[MCQRecord]:
    """All 13,679 real SciQ questions; items with a passage are grouped by passage text."""
    return list(_sciq_records(shared_data("sciq")))


@pytest.fixture
def public_contacts() -> tuple[str, ...]:
    """Reviewed public office contacts found in the real SyllabusQA answers (the privacy allow list)."""
    return SYLLABUSQA_PUBLIC_CONTACTS


@pytest.fixture
def make_qa() -> Callable[..., QARecord]:
    """Factory for a small synthetic QA record; keyword arguments override the defaults."""

    def make(**overrides: object) -> QARecord:
        values: dict[str, object] = {
            "id": "q1",
            "syllabus_name": "bio101",
            "question_type": "single factual",
            "question": "When are office hours?",
            "answer": "Mondays at 2pm.",
            "answer_spans": ("Office hours: Mondays 2pm",),
        }
        values.update(overrides)
        return QARecord(**values)  # type: ignore[arg-type]

    return make
