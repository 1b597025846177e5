"""Page boundaries of a document text, from its PDF, as character offsets.

SyllabusQA ships the authors' extracted text and the PDF separately, with no page marks in the text.
To show an answer span on its PDF page we extract each PDF page's text and find where it starts in the
document text, comparing only letters and digits (extraction tools disagree on spaces, hyphens and
line breaks). Pages that cannot be found get an estimate from the page text lengths, kept monotonic.
"""

from __future__ import annotations

import bisect
import functools
import logging
from collections.abc import Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

#: Length of the page-start probe in letters/digits; long enough to be unique in a syllabus.
PROBE = 40


def _alnum_index(text: str) -> tuple[str, list[int]]:
    """Lowercased letters and digits of ``text`` and each one's offset in ``text``."""
    chars: list[str] = []
    offsets: list[int] = []
    for i, ch in enumerate(text):
        if ch.isalnum():
            chars.append(ch.lower())
            offsets.append(i)
    return "".join(chars), offsets


def extract_pdf_pages(pdf_path: Path) -> list[str]:
    """Return the text of each page of a PDF (pypdf; an empty string for an image-only page).

    Extraction is the slow part of an import (about 0.2 s a page), so results are cached in-process
    by path, size and modification time.
    """
    stat = pdf_path.stat()
    return list(_extract_cached(str(pdf_path), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=256)
def _extract_cached(path: str, size: int, mtime_ns: int) -> tuple[str, ...]:
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader = PdfReader(path)
    return tuple(page.extract_text() or "" for page in reader.pages)


def page_starts(text: str, pages: Sequence[str]) -> list[int]:
    """Align PDF page texts to a document text.

    Args:
        text: the document text offsets refer to.
        pages: the text of each PDF page, in order.

    Returns:
        ``starts`` with ``starts[0] == 0`` and one non-decreasing offset per page.
    """
    if not pages:
        return []
    doc, doc_offsets = _alnum_index(text)
    starts_norm = [0]
    cursor = 0
    for k in range(1, len(pages)):
        prev_len = len(_alnum_index(pages[k - 1])[0])
        page_norm = _alnum_index(pages[k])[0]
        found = -1
        # Try probes at a few positions on the page: headers/footers or images may differ.
        for skip in (0, PROBE, 2 * PROBE, 4 * PROBE):
            probe = page_norm[skip : skip + PROBE]
            if len(probe) < 12:
                break
            pos = doc.find(probe, cursor)
            if pos >= 0:
                found = max(cursor, pos - skip)
                break
        if found < 0:
            found = min(len(doc), cursor + prev_len) if doc else 0
            logger.info("page %d not found in text; estimated at %d", k + 1, found)
        starts_norm.append(found)
        cursor = found
    starts = [0]
    for norm in starts_norm[1:]:
        starts.append(doc_offsets[norm] if norm < len(doc_offsets) else len(text))
    # Monotonic by construction of the cursor, but guard against rounding at the end of the text.
    for i in range(1, len(starts)):
        starts[i] = max(starts[i], starts[i - 1])
    return starts


def page_of(starts: Sequence[int], offset: int) -> int:
    """1-based page holding ``offset`` (1 when there are no page boundaries)."""
    if not starts:
        return 1
    return max(1, bisect.bisect_right(list(starts), offset))
