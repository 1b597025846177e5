"""Text decoding and storable text shared by importers, HIT forms and QC (span location: annotation/spans.py).

No Django import: QC, importers and tests use it directly.
"""

from __future__ import annotations

import re
from pathlib import Path

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


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` without the characters no database column takes: NUL (PostgreSQL refuses it in text and
    JSON) and lone UTF-16 surrogates (not encodable as UTF-8). Everything else is kept as typed."""
    return _UNSTORABLE.sub("", text) if _UNSTORABLE.search(text) else text
