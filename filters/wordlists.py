"""Word lists of the sentence filter, kept as plain text files in ``filters/data/``.

Why files: researchers tune these lists for a new domain (the paper notes that only the instructional
vocabulary is science-specific); editing a text file needs no code change.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"


@cache
def load_wordlist(name: str) -> frozenset[str]:
    """Read one list from ``filters/data/<name>.txt``: lowercase entries, comments and blanks skipped.

    Args:
        name: file stem, e.g. ``"discourse_markers"``.

    Returns:
        The entries, lowercased and with inner whitespace collapsed.

    Raises:
        FileNotFoundError: when the list does not exist (the message names the path).
    """
    path = DATA_DIR / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"word list '{name}' not found at {path}")
    entries: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip().lower()
        if entry:
            entries.add(" ".join(entry.split()))
    logger.debug("loaded word list %s (%d entries)", name, len(entries))
    return frozenset(entries)


def split_words_and_phrases(entries: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Separate single words from multi-word phrases, longest phrase first.

    Args:
        entries: a list from :func:`load_wordlist`.

    Returns:
        ``(words, phrases)``; phrases are sorted longest first so the longest marker wins.
    """
    words = frozenset(e for e in entries if " " not in e)
    phrases = tuple(sorted((e for e in entries if " " in e), key=len, reverse=True))
    return words, phrases
