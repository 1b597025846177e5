"""Split a long document into overlapping character chunks the way the SyllabusQA baselines did.

The SyllabusQA code (``code/retrievalauggen/chunk_syllabi.py``) chunks syllabi with LangChain's
``RecursiveCharacterTextSplitter(chunk_size, chunk_overlap, length_function=len)``: it splits on the
first separator of ``["\\n\\n", "\\n", " ", ""]`` found in the text, keeps the separator at the start of
the following piece, recurses into pieces that are still too long, and greedily merges pieces back into
chunks of at most ``chunk_size`` characters, carrying up to ``chunk_overlap`` characters of the previous
chunk into the next. We re-implement that algorithm here (LangChain pulls in a large dependency tree for
one function); ``tests/unit/evaluation/test_chunking.py`` pins its behaviour. The search baseline uses
200/50 (paper, appendix E); the RAG baselines use the authors' config default of 1000/200.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

logger = logging.getLogger(__name__)

DEFAULT_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", " ", "")
SEARCH_CHUNK_SIZE = 200
SEARCH_CHUNK_OVERLAP = 50
RAG_CHUNK_SIZE = 1000
RAG_CHUNK_OVERLAP = 200


def split_text(
    text: str,
    chunk_size: int = SEARCH_CHUNK_SIZE,
    chunk_overlap: int = SEARCH_CHUNK_OVERLAP,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
) -> list[str]:
    """Split ``text`` into chunks of at most ``chunk_size`` characters with overlap between neighbours.

    Args:
        text: the document text.
        chunk_size: maximum chunk length in characters (a piece with no separator left may exceed it).
        chunk_overlap: how many characters of the previous chunk the next chunk may repeat.
        separators: separators tried in order; ``""`` splits into single characters.

    Returns:
        The chunks, stripped of surrounding whitespace, empty chunks dropped, in document order.

    Raises:
        ValueError: when ``chunk_overlap`` is not smaller than ``chunk_size`` or a size is not positive.
    """
    if chunk_size <= 0 or chunk_overlap < 0:
        raise ValueError(f"chunk_size={chunk_size} must be > 0 and chunk_overlap={chunk_overlap} >= 0")
    if chunk_overlap >= chunk_size:
        raise ValueError(f"chunk_overlap={chunk_overlap} must be smaller than chunk_size={chunk_size}")
    return _split(text, list(separators), chunk_size, chunk_overlap)


def _split(text: str, separators: list[str], chunk_size: int, chunk_overlap: int) -> list[str]:
    separator = separators[-1]
    remaining: list[str] = []
    for index, candidate in enumerate(separators):
        if candidate == "":
            separator = candidate
            break
        if candidate in text:
            separator = candidate
            remaining = separators[index + 1 :]
            break
    pieces = _split_keeping_separator(text, separator)
    chunks: list[str] = []
    short: list[str] = []
    for piece in pieces:
        if len(piece) < chunk_size:
            short.append(piece)
            continue
        if short:
            chunks.extend(_merge(short, chunk_size, chunk_overlap))
            short = []
        if remaining:
            chunks.extend(_split(piece, remaining, chunk_size, chunk_overlap))
        else:
            chunks.append(piece)
    if short:
        chunks.extend(_merge(short, chunk_size, chunk_overlap))
    return chunks


def _split_keeping_separator(text: str, separator: str) -> list[str]:
    """Split on ``separator`` and glue each separator to the start of the piece that follows it."""
    if separator == "":
        return [char for char in text]
    parts = re.split(f"({re.escape(separator)})", text)
    pieces = [parts[0]] + [parts[i] + parts[i + 1] for i in range(1, len(parts) - 1, 2)]
    if len(parts) % 2 == 0:
        pieces.append(parts[-1])
    return [piece for piece in pieces if piece != ""]


def _merge(pieces: list[str], chunk_size: int, chunk_overlap: int) -> list[str]:
    """Greedily join pieces into chunks, keeping a tail of at most ``chunk_overlap`` characters."""
    chunks: list[str] = []
    current: list[str] = []
    total = 0
    for piece in pieces:
        length = len(piece)
        if total + length > chunk_size:
            if total > chunk_size:
                logger.debug("created a chunk of %d characters, longer than %d", total, chunk_size)
            if current:
                joined = "".join(current).strip()
                if joined:
                    chunks.append(joined)
                while total > chunk_overlap or (total + length > chunk_size and total > 0):
                    total -= len(current[0])
                    current = current[1:]
        current.append(piece)
        total += length
    joined = "".join(current).strip()
    if joined:
        chunks.append(joined)
    return chunks
