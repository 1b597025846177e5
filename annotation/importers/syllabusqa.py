"""Reader of the SyllabusQA release's syllabi (papers/syllabusqa.txt; ``import_syllabusqa`` in the commands).

The command is described in docs/reference/commands.md.

Layout: ``data/dataset_split/{train,val,test}.csv`` (read by :mod:`annotation.importers.syllabusqa_csv`)
and ``syllabi/syllabi_redacted/{text,pdf}/`` with ``syllabi/syllabi_meta_info.csv``. The text files are
Mac Roman with CR line endings. Everything is parsed and checked before anything is written, so a
malformed release leaves the database unchanged.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from annotation.hashing import file_sha256
from annotation.importers.errors import ImportDataError
from annotation.pages import extract_pdf_pages, page_starts
from annotation.textnorm import decode_mac_roman, decode_utf8

META_COLUMNS = ("name", "course", "major", "area", "university", "num_pages")


@dataclass(frozen=True)
class SyllabusRecord:
    """One syllabus: its name, clean text, PDF path (if any), page starts and metadata."""

    name: str
    text: str
    pdf_path: Optional[Path]
    page_starts: tuple[int, ...]
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class KnownPages:
    """Page starts an earlier import computed, with the hashes of the text and PDF they came from."""

    text_sha256: str
    pdf_sha256: str
    starts: tuple[int, ...]

    def matches(self, text: str, pdf_path: Path) -> bool:
        """True when both the text and the PDF are unchanged."""
        return (
            hashlib.sha256(text.encode("utf-8")).hexdigest() == self.text_sha256
            and file_sha256(pdf_path) == self.pdf_sha256
        )


def _syllabi_dir(root: Path) -> Path:
    candidate = root / "syllabi" / "syllabi_redacted"
    if not (candidate / "text").is_dir():
        raise ImportDataError(
            root, "no syllabi/syllabi_redacted/text/ folder (expected the SyllabusQA layout)"
        )
    return candidate


def read_metadata(root: Path) -> dict[str, dict]:
    """Syllabus metadata by name (course, major, area, university, num_pages, meta_row: the file's row).

    The released metadata CSV is mojibake (Mac Roman read as Latin-1, saved as UTF-8); it is repaired
    here, and a ``.utf8.csv`` sibling is preferred when present.
    """
    folder = root / "syllabi"
    path = folder / "syllabi_meta_info.utf8.csv"
    repair = False
    if not path.is_file():
        path = folder / "syllabi_meta_info.csv"
        repair = True
    if not path.is_file():
        return {}
    result: dict[str, dict] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row, record in enumerate(csv.DictReader(handle)):
            values = {k: (record.get(k) or "") for k in META_COLUMNS}
            if repair:
                values = {k: _undo_mojibake(v) for k, v in values.items()}
            name = values.pop("name")
            # The row order of the metadata file, so a release can write it back in the same order.
            result[name] = {**values, "meta_row": row}
    return result


def _undo_mojibake(value: str) -> str:
    try:
        return value.encode("latin-1").decode("mac_roman")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def read_syllabi(
    root: Path,
    names: set[str],
    encoding: str = "mac_roman",
    progress: Optional[Callable[[str], None]] = None,
    known_pages: Optional[Mapping[str, KnownPages]] = None,
) -> Iterator[SyllabusRecord]:
    """Yield each named syllabus with its text, PDF and page starts.

    Args:
        root: the release folder.
        names: syllabus names the QA rows refer to; each must have a text file.
        encoding: ``mac_roman`` (the release's ``text/``) or ``utf-8`` (for converted files).
        progress: called with each syllabus name once it is read.
        known_pages: page starts computed by an earlier import, reused when neither the text nor the
            PDF changed (PDF text extraction is the slow part of a re-import).

    Raises:
        ImportDataError: for a missing or undecodable syllabus text file.
    """
    syllabi = _syllabi_dir(root)
    text_dir = syllabi / ("text" if encoding == "mac_roman" else "text_utf8")
    if not text_dir.is_dir():
        raise ImportDataError(text_dir, "folder not found")
    metadata = read_metadata(root)
    decode = decode_mac_roman if encoding == "mac_roman" else decode_utf8
    for name in sorted(names):
        path = text_dir / f"{name}.txt"
        if not path.is_file():
            raise ImportDataError(path, f"syllabus text file for '{name}' not found")
        try:
            text = decode(path.read_bytes(), path)
        except ValueError as exc:
            raise ImportDataError(path, str(exc).split(": ", 1)[-1]) from exc
        pdf = syllabi / "pdf" / f"{name}.pdf"
        pdf_path = pdf if pdf.is_file() else None
        starts: tuple[int, ...] = ()
        known = (known_pages or {}).get(name)
        if pdf_path is not None and known is not None and known.matches(text, pdf_path):
            starts = known.starts
        elif pdf_path is not None:
            try:
                starts = tuple(page_starts(text, extract_pdf_pages(pdf_path)))
            except Exception as exc:  # pypdf raises many types for damaged files
                raise ImportDataError(pdf_path, f"cannot read the PDF: {exc}") from exc
        if progress:
            progress(name)
        yield SyllabusRecord(
            name=name, text=text, pdf_path=pdf_path, page_starts=starts, metadata=metadata.get(name, {})
        )
