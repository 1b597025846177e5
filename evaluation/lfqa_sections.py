"""Cut a long document into the section-wise passages the LFQA paper feeds its LLMs, and pick judge context.

Bhat et al. (papers/lfqa-answerability.txt, section 3.1 and appendix A.5) extract Wikipedia articles
section by section, keep passages of at least 256 tokens (spaCy tokenizer), combine shorter sections,
cap the context at 2k tokens, and drop non-informative sections ("References", "See also", ...).

Our documents are plain text (syllabi, textbook chapters) without section markup, so a *heading* is
recognised as a short line without sentence-final punctuation (:func:`is_heading`); the text between two
headings is a raw section. Raw sections under an excluded heading are dropped, short neighbours are
merged up to ``max_tokens``, and a raw section longer than ``max_tokens`` is cut at line boundaries (a
single over-long line at token boundaries). Token counts use spaCy's rule-based English tokenizer
(``spacy.blank("en")``), as the paper did; no model is loaded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from evaluation.retrieval import ChunkIndex

logger = logging.getLogger(__name__)

MIN_SECTION_TOKENS = 256  # paper, section 3.1
MAX_CONTEXT_TOKENS = 2048  # paper, section 3.1: "a maximum context length of 2k tokens"
# Paper, appendix A.5: sections removed from consideration.
NON_INFORMATIVE_SECTIONS: tuple[str, ...] = (
    "References",
    "See also",
    "Notes",
    "Sources",
    "External links",
    "History",
    "Further reading",
)
# ~4 characters per token: the 2k-token context cap in characters, for callers that select by length.
MAX_CONTEXT_CHARS = 8000

_HEADING_MAX_WORDS = 8
_NUMBERING_RE = re.compile(r"^\s*(?:[IVXLC]+\.|\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Section:
    """One passage of a document, ready to be summarized.

    Attributes:
        index: position among the kept sections (0-based).
        text: the passage text (lines joined with newlines).
        start: character offset of its first line in the document.
        end: character offset just after its last line.
        tokens: spaCy token count.
        headings: the headings of the raw sections merged into it, in order.
    """

    index: int
    text: str
    start: int
    end: int
    tokens: int
    headings: tuple[str, ...] = ()


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    import spacy

    return spacy.blank("en").tokenizer


def spacy_token_count(text: str) -> int:
    """Count tokens with spaCy's English tokenizer (the paper's unit for section lengths)."""
    return len(_tokenizer()(text))


def normalize_heading(line: str) -> str:
    """Lower-case a heading without numbering, markup and trailing colon ("2. See also:" -> "see also")."""
    text = _NUMBERING_RE.sub("", line.strip())
    text = text.strip("#*=_ \t").rstrip(":").strip()
    return re.sub(r"\s+", " ", text).lower()


def is_heading(line: str) -> bool:
    """Tell whether a line looks like a section heading: short, has letters, no sentence-final punctuation."""
    text = line.strip()
    if not text or len(text.split()) > _HEADING_MAX_WORDS:
        return False
    if text[-1] in ".?!,;":
        return False
    return any(ch.isalpha() for ch in text)


@dataclass(frozen=True)
class _Line:
    text: str
    start: int
    end: int
    tokens: int


@dataclass(frozen=True)
class _Block:
    heading: Optional[str]
    lines: tuple[_Line, ...]

    @property
    def tokens(self) -> int:
        return sum(line.tokens for line in self.lines)


def _lines(text: str, count: TokenCounter) -> list[_Line]:
    out: list[_Line] = []
    for match in re.finditer(r"[^\n]*\S[^\n]*", text):
        out.append(_Line(match.group(0).strip(), match.start(), match.end(), count(match.group(0))))
    return out


def _blocks(lines: Sequence[_Line]) -> list[_Block]:
    blocks: list[_Block] = []
    heading: Optional[str] = None
    current: list[_Line] = []
    for line in lines:
        if is_heading(line.text) and current:
            blocks.append(_Block(heading, tuple(current)))
            heading, current = line.text, [line]
        else:
            if not current and is_heading(line.text):
                heading = line.text
            current.append(line)
    if current:
        blocks.append(_Block(heading, tuple(current)))
    return blocks


def _split_long_line(line: _Line, max_tokens: int, count: TokenCounter) -> list[_Line]:
    """Cut one over-long line into pieces of at most ``max_tokens`` tokens at whitespace.

    spaCy splits on whitespace before anything else, so a piece's token count is the sum of its words'.
    """
    pieces: list[_Line] = []
    group: list[re.Match[str]] = []
    size = 0

    def close() -> None:
        chunk_start, chunk_end = group[0].start(), group[-1].end()
        chunk = line.text[chunk_start:chunk_end]
        pieces.append(_Line(chunk, line.start + chunk_start, line.start + chunk_end, size))

    for word in re.finditer(r"\S+", line.text):
        tokens = count(word.group(0))
        if group and size + tokens > max_tokens:
            close()
            group, size = [], 0
        group.append(word)
        size += tokens
    if group:
        close()
    return pieces


def split_sections(
    text: str,
    *,
    min_tokens: int = MIN_SECTION_TOKENS,
    max_tokens: int = MAX_CONTEXT_TOKENS,
    excluded_headings: Sequence[str] = NON_INFORMATIVE_SECTIONS,
    count_tokens: TokenCounter = spacy_token_count,
) -> list[Section]:
    """Cut a document into section-wise passages of ``min_tokens`` to ``max_tokens`` tokens.

    Args:
        text: the whole document.
        min_tokens: shorter raw sections are combined with their neighbours (paper: 256). The last
            passage may stay shorter when merging it would exceed ``max_tokens``.
        max_tokens: no passage is longer (paper: 2k tokens).
        excluded_headings: raw sections under these headings are dropped (case-insensitive).
        count_tokens: token counter (spaCy's tokenizer by default).

    Returns:
        The passages in document order; empty for a document without text.

    Raises:
        ValueError: when ``min_tokens`` is not positive or exceeds ``max_tokens``.
    """
    if min_tokens <= 0 or min_tokens > max_tokens:
        raise ValueError(f"min_tokens={min_tokens} must be positive and at most max_tokens={max_tokens}")
    excluded = {normalize_heading(h) for h in excluded_headings}
    kept: list[_Block] = []
    for block in _blocks(_lines(text, count_tokens)):
        if block.heading is not None and normalize_heading(block.heading) in excluded:
            logger.info("LFQA sections: dropped non-informative section %r", block.heading)
            continue
        kept.append(block)
    merged = _merge_short(_units(kept, max_tokens, count_tokens), min_tokens, max_tokens)
    sections: list[Section] = []
    for index, (headings, lines) in enumerate(merged):
        body = "\n".join(line.text for line in lines)
        sections.append(
            Section(
                index=index,
                text=body,
                start=lines[0].start,
                end=lines[-1].end,
                tokens=sum(line.tokens for line in lines),
                headings=tuple(headings),
            )
        )
    return sections


def _units(
    kept: Sequence[_Block], max_tokens: int, count_tokens: TokenCounter
) -> list[tuple[Optional[str], list[_Line]]]:
    """Raw sections, or line groups of an over-long raw section (one unit never exceeds ``max_tokens``)."""
    units: list[tuple[Optional[str], list[_Line]]] = []
    for block in kept:
        if block.tokens <= max_tokens:
            units.append((block.heading, list(block.lines)))
            continue
        groups: list[list[_Line]] = [[]]
        for line in block.lines:
            pieces = [line] if line.tokens <= max_tokens else _split_long_line(line, max_tokens, count_tokens)
            for piece in pieces:
                if groups[-1] and sum(x.tokens for x in groups[-1]) + piece.tokens > max_tokens:
                    groups.append([])
                groups[-1].append(piece)
        for position, group in enumerate(groups):
            units.append((block.heading if position == 0 else None, group))
    return units


def _merge_short(
    units: Sequence[tuple[Optional[str], list[_Line]]], min_tokens: int, max_tokens: int
) -> list[tuple[list[str], list[_Line]]]:
    """Units shorter than ``min_tokens`` joined with the next ones while they fit in ``max_tokens``; a
    short tail joins the passage before it when that fits."""
    merged: list[tuple[list[str], list[_Line]]] = []
    for heading, lines in units:
        size = sum(line.tokens for line in lines)
        if merged:
            previous = sum(line.tokens for line in merged[-1][1])
            if previous < min_tokens and previous + size <= max_tokens:
                merged[-1][0].extend([heading] if heading else [])
                merged[-1][1].extend(lines)
                continue
        merged.append(([heading] if heading else [], list(lines)))
    if len(merged) > 1:
        tail = sum(line.tokens for line in merged[-1][1])
        before = sum(line.tokens for line in merged[-2][1])
        if tail < min_tokens and before + tail <= max_tokens:
            headings, lines = merged.pop()
            merged[-1][0].extend(headings)
            merged[-1][1].extend(lines)
    return merged


def select_context(document: str, query: str, max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """Return the document, or its parts most relevant to ``query`` when it is longer than ``max_chars``.

    The paper caps every context at 2k tokens. A whole syllabus is often longer, so the judge and the
    complexity rater see the 1000-character chunks that BM25 ranks highest for the query (the question,
    plus the reference answer for the judge), in document order, up to ``max_chars``.

    Args:
        document: the source text.
        query: what the context must support.
        max_chars: the budget (``MAX_CONTEXT_CHARS`` ~ 2k tokens).

    Returns:
        The selected text; chunks that are not adjacent are separated by a line "...".
    """
    if len(document) <= max_chars:
        return document
    index = ChunkIndex(document, 1000, 0)
    chosen: list[int] = []
    used = 0
    for chunk in index.search(query, len(index.chunks)):
        size = len(chunk.text) + 5
        if used + size > max_chars:
            continue
        chosen.append(chunk.chunk_index)
        used += size
    chosen.sort()
    parts: list[str] = []
    for position, chunk_index in enumerate(chosen):
        if position and chunk_index != chosen[position - 1] + 1:
            parts.append("...")
        parts.append(index.chunks[chunk_index])
    return "\n".join(parts)
