"""Reader of plain text and PDF files into documents made of paragraphs (``import_corpus``).

A paragraph is a block separated by blank lines. PDF text often has no blank lines, so long blocks are
also cut after lines that end a sentence. Whitespace inside a paragraph is kept as extracted so that
paragraph offsets point into the document text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from annotation.importers.errors import ImportDataError
from annotation.pages import extract_pdf_pages
from annotation.textnorm import decode_utf8

TEXT_SUFFIXES = {".txt", ".md", ".text"}
#: Blocks longer than this (characters) are cut at sentence-ending line breaks.
LONG_BLOCK = 1200
_BLANK = re.compile(r"\n[ \t]*\n+")
_SENTENCE_END_LINE = re.compile(r"(?<=[.!?:;])[ \t]*\n")


@dataclass(frozen=True)
class Paragraph:
    """A paragraph and its character offset in the document text."""

    start: int
    text: str


@dataclass(frozen=True)
class DocumentRecord:
    """A document read from a file: its text, page starts (PDF) and paragraphs."""

    name: str
    path: Path
    text: str
    page_starts: tuple[int, ...]
    paragraphs: tuple[Paragraph, ...]


def split_paragraphs(text: str, min_chars: int = 1) -> list[Paragraph]:
    """Cut a text into paragraphs with their offsets (blank lines, then sentence ends in long blocks)."""
    result: list[Paragraph] = []
    block_start = 0
    bounds = [(m.start(), m.end()) for m in _BLANK.finditer(text)] + [(len(text), len(text))]
    for gap_start, gap_end in bounds:
        block = text[block_start:gap_start]
        pieces = [(0, block)]
        if len(block) > LONG_BLOCK:
            pieces, last = [], 0
            for m in _SENTENCE_END_LINE.finditer(block):
                pieces.append((last, block[last : m.start()]))
                last = m.end()
            pieces.append((last, block[last:]))
        for offset, piece in pieces:
            stripped = piece.strip()
            if len(stripped) >= max(1, min_chars):
                lead = len(piece) - len(piece.lstrip())
                result.append(Paragraph(start=block_start + offset + lead, text=stripped))
        block_start = gap_end
    return result


def read_document(path: Path, min_paragraph_chars: int = 1) -> DocumentRecord:
    """Read one text or PDF file.

    Raises:
        ImportDataError: for an unsupported suffix, an undecodable text file, or an unreadable PDF.
    """
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        try:
            pages = extract_pdf_pages(path)
        except Exception as exc:  # pypdf raises many types for damaged files
            raise ImportDataError(path, f"cannot read the PDF: {exc}") from exc
        starts: list[int] = []
        parts: list[str] = []
        offset = 0
        for page in pages:
            starts.append(offset)
            page_text = page.replace("\r\n", "\n").replace("\r", "\n").strip("\n") + "\n\n"
            parts.append(page_text)
            offset += len(page_text)
        text = "".join(parts)
        if not text.strip():
            raise ImportDataError(path, "the PDF has no extractable text (scanned images need OCR first)")
        page_starts: tuple[int, ...] = tuple(starts)
    elif suffix in TEXT_SUFFIXES:
        try:
            text = decode_utf8(path.read_bytes(), path)
        except ValueError as exc:
            raise ImportDataError(path, str(exc).split(": ", 1)[-1]) from exc
        page_starts = ()
    else:
        raise ImportDataError(path, f"unsupported file type '{suffix}' (use .txt, .md or .pdf)")
    return DocumentRecord(
        name=path.stem,
        path=path,
        text=text,
        page_starts=page_starts,
        paragraphs=tuple(split_paragraphs(text, min_paragraph_chars)),
    )


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files named directly plus the supported files inside named folders, sorted.

    Raises:
        ImportDataError: for a path that does not exist.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(
                sorted(
                    p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES | {".pdf"}
                )
            )
        elif path.is_file():
            files.append(path)
        else:
            raise ImportDataError(path, "no such file or folder")
    return files
