"""Section filtering of long documents (LFQA answerability paper, section 3 and appendix A.5).

Why: long articles carry sections with no content to ask about (References, See also, External links
...). The paper drops documents under 2k tokens, removes a list of non-informative sections, and merges
short sections so each chunk has at least 256 tokens (max context 2k). These are pure functions over
text; the tokenizer is injectable (default: spaCy's English tokenizer, as in the paper).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Optional

logger = logging.getLogger(__name__)

DEFAULT_DROPPED_TITLES: frozenset[str] = frozenset(
    {
        "references",
        "see also",
        "notes",
        "sources",
        "external links",
        "history",  # listed by the paper (appendix A.5) for its Wikipedia study
        "further reading",
        "bibliography",
        "citations",
        "footnotes",
        "notes and references",
        "references and notes",
        "works cited",
        "literature cited",
        "acknowledgements",
        "acknowledgments",
    }
)

_WIKI_HEADING = re.compile(r"^\s*(={2,6})\s*(.+?)\s*\1\s*$")
_MARKDOWN_HEADING = re.compile(r"^\s*#{1,6}\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Section:
    """One titled section of a document (title "" for text before the first heading)."""

    title: str
    text: str


@dataclass(frozen=True)
class SectionOptions:
    """Settings of section filtering.

    Attributes:
        dropped_titles: lowercase titles of sections to drop (compared after trimming punctuation).
        min_document_tokens: documents with fewer tokens (after dropping sections) are rejected.
        min_chunk_tokens: consecutive sections are merged until a chunk has at least this many tokens.
        max_chunk_tokens: a merge never grows a chunk beyond this many tokens.
    """

    dropped_titles: frozenset[str] = DEFAULT_DROPPED_TITLES
    min_document_tokens: int = 2000
    min_chunk_tokens: int = 256
    max_chunk_tokens: int = 2048


@dataclass(frozen=True)
class SectionFilterResult:
    """Outcome of filtering one document.

    Attributes:
        accepted: False when the kept text is shorter than ``min_document_tokens``.
        kept: sections kept, in order.
        dropped_titles: titles of the dropped sections.
        token_count: tokens in the kept sections.
        chunks: kept sections merged into chunks of ``min_chunk_tokens``..``max_chunk_tokens`` tokens.
    """

    accepted: bool
    kept: tuple[Section, ...]
    dropped_titles: tuple[str, ...]
    token_count: int
    chunks: tuple[str, ...] = field(default_factory=tuple)


@cache
def _spacy_tokenizer() -> Callable[[str], int]:
    """Token counter using spaCy's rule-based English tokenizer (no model needed)."""
    import spacy

    tokenizer = spacy.blank("en").tokenizer
    return lambda text: sum(1 for t in tokenizer(text) if not t.is_space)


def split_sections(text: str) -> list[Section]:
    """Split a document at wikitext (``== Title ==``) or markdown (``# Title``) headings.

    Args:
        text: the document.

    Returns:
        Sections in order; text before the first heading gets the title "" (dropped when blank).
    """
    sections: list[Section] = []
    title, lines = "", []
    for line in text.splitlines():
        match = _WIKI_HEADING.match(line) or _MARKDOWN_HEADING.match(line)
        if match:
            if title or "".join(lines).strip():
                sections.append(Section(title, "\n".join(lines).strip()))
            title, lines = match.group(match.lastindex or 1).strip(), []
        else:
            lines.append(line)
    if title or "".join(lines).strip():
        sections.append(Section(title, "\n".join(lines).strip()))
    return sections


def is_dropped_title(title: str, dropped: frozenset[str] = DEFAULT_DROPPED_TITLES) -> bool:
    """True when a section title is one of the non-informative titles (case and punctuation ignored)."""
    return " ".join(re.sub(r"[^\w\s]", " ", title.lower()).split()) in dropped


def chunk_sections(
    sections: Sequence[Section], count_tokens: Callable[[str], int], min_tokens: int, max_tokens: int
) -> list[str]:
    """Merge consecutive sections until each chunk reaches ``min_tokens`` without passing ``max_tokens``.

    A single section longer than ``max_tokens`` stays one chunk (the caller truncates to its context).
    """
    chunks: list[str] = []
    current: list[str] = []
    current_tokens = 0
    for section in sections:
        n = count_tokens(section.text)
        if current and current_tokens + n > max_tokens:
            chunks.append("\n\n".join(current))
            current, current_tokens = [], 0
        current.append(section.text)
        current_tokens += n
        if current_tokens >= min_tokens:
            chunks.append("\n\n".join(current))
            current, current_tokens = [], 0
    if current:
        if chunks and count_tokens(chunks[-1]) + current_tokens <= max_tokens:
            chunks[-1] = chunks[-1] + "\n\n" + "\n\n".join(current)
        else:
            chunks.append("\n\n".join(current))
    return chunks


def filter_sections(
    sections: Sequence[Section],
    options: Optional[SectionOptions] = None,
    count_tokens: Optional[Callable[[str], int]] = None,
) -> SectionFilterResult:
    """Drop non-informative sections, reject short documents and chunk the rest.

    Args:
        sections: the document's sections (see :func:`split_sections`).
        options: titles and token thresholds.
        count_tokens: token counter; defaults to spaCy's English tokenizer.

    Returns:
        The filter result.
    """
    options = options or SectionOptions()
    count = count_tokens or _spacy_tokenizer()
    kept = [s for s in sections if s.text.strip() and not is_dropped_title(s.title, options.dropped_titles)]
    dropped = [s.title for s in sections if is_dropped_title(s.title, options.dropped_titles)]
    tokens = sum(count(s.text) for s in kept)
    accepted = tokens >= options.min_document_tokens
    chunks = []
    if accepted:
        chunks = chunk_sections(kept, count, options.min_chunk_tokens, options.max_chunk_tokens)
    logger.debug("kept %d sections (%d tokens), dropped %s", len(kept), tokens, dropped)
    return SectionFilterResult(accepted, tuple(kept), tuple(dropped), tokens, tuple(chunks))


def filter_document(
    text: str, options: Optional[SectionOptions] = None, count_tokens: Optional[Callable[[str], int]] = None
) -> SectionFilterResult:
    """Split a document at its headings and filter it (see :func:`filter_sections`)."""
    return filter_sections(split_sections(text), options, count_tokens)
