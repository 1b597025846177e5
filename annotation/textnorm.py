"""Text decoding and whitespace/case-insensitive matching shared by importers, span location and QC.

No Django import: QC, importers and tests use it directly.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path
from typing import Optional

_WS = re.compile(r"\s+")


def decode_mac_roman(raw: bytes, path: Path) -> str:
    """Decode a SyllabusQA text file (Mac Roman, CR line endings) to clean UTF-8 text with LF.

    Mac Roman assigns a character to every byte, so a wrong encoding never fails to decode; it shows up
    as binary control bytes or as UTF-8 sequences, which are rejected here with a clear message.

    Raises:
        ValueError: when the bytes do not look like Mac Roman text.
    """
    bad = sorted({b for b in raw if b < 32 and b not in (9, 10, 12, 13)})
    if bad:
        raise ValueError(f"{path.name}: not a Mac Roman text file (control bytes {bad[:5]} found)")
    if any(b > 127 for b in raw):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            raise ValueError(
                f"{path.name}: the file is UTF-8, not Mac Roman; use the release's text/ folder "
                "or pass --encoding utf-8"
            )
    text = raw.decode("mac_roman")
    return normalize_newlines(text)


def decode_utf8(raw: bytes, path: Path) -> str:
    """Decode UTF-8 text (a BOM is dropped) and normalize line endings.

    Raises:
        ValueError: naming the file and byte offset when the bytes are not UTF-8.
    """
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path.name}: not UTF-8 (byte {exc.start}: {raw[exc.start : exc.start + 1]!r})"
        ) from exc
    return normalize_newlines(text)


def normalize_newlines(text: str) -> str:
    """CRLF and CR become LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def collapse(text: str) -> str:
    """Lowercase and collapse every whitespace run to one space (the comparison key for spans)."""
    return _WS.sub(" ", text).strip().lower()


class NormalizedIndex:
    """A document text lowercased with whitespace runs collapsed, mapping back to original offsets.

    ``find(span)`` locates a span the way a reader would see it (ignoring case and line breaks) and
    returns offsets into the original text, so the exact document text can be stored and shown.
    """

    def __init__(self, text: str) -> None:
        chars: list[str] = []
        offsets: list[int] = []
        in_space = True  # drop leading whitespace
        for i, ch in enumerate(text):
            if ch.isspace():
                if not in_space:
                    chars.append(" ")
                    offsets.append(i)
                in_space = True
            else:
                chars.append(ch.lower())
                offsets.append(i)
                in_space = False
        self.text = text
        self.normalized = "".join(chars)
        self._offsets = offsets

    def find(self, span: str, start: int = 0) -> Optional[tuple[int, int]]:
        """Return ``(start, end)`` in the original text of the first match of ``span``, or None."""
        key = collapse(span)
        if not key:
            return None
        pos = self.normalized.find(key, self._normalized_pos(start))
        if pos < 0:
            return None
        end_norm = pos + len(key) - 1
        return self._offsets[pos], self._offsets[end_norm] + 1

    def _normalized_pos(self, original: int) -> int:
        if original <= 0:
            return 0
        return bisect.bisect_left(self._offsets, original)
