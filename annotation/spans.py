"""Locate copied answer spans in a document and repair near misses to the exact document text.

Why: SyllabusQA workers copy answer spans from a syllabus, but copies pick up case changes, re-flowed
whitespace and a slipped character or two. Comparing after normalising case and whitespace finds most
of them; a span within ``max_edits`` characters of some document substring is *repaired* to that exact
substring and its offsets, so exports and span-based metrics point at real document text.
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import asdict, dataclass
from typing import Any

logger = logging.getLogger(__name__)

EXACT = "exact"
NORMALIZED = "normalized"
REPAIRED = "repaired"
NOT_FOUND = "not_found"

_WHITESPACE = re.compile(r"\s+")

MAX_REPAIR_CHARS = 400
"""Longest span (normalised) that near-miss repair is tried on. Repair costs about the span's length
times the document's; exact and case/whitespace matches (linear) are tried on spans of any length."""


@dataclass(frozen=True)
class NormalizedDocument:
    """A document lowercased with whitespace runs collapsed, plus the map back to original offsets.

    Attributes:
        original: the document text as stored.
        text: the normalised text.
        offsets: ``offsets[i]`` is the index in ``original`` of ``text[i]``; one extra entry at the end
            holds ``len(original)`` so end offsets map too.
    """

    original: str
    text: str
    offsets: tuple[int, ...]

    def find(self, span: str, start: int = 0) -> tuple[int, int] | None:
        """``(start, end)`` in the original text of the first case/whitespace-insensitive match of
        ``span`` at or after original offset ``start``; None when there is none."""
        key = normalize_text(span)
        if not key:
            return None
        pos = self.text.find(key, bisect.bisect_left(self.offsets, start) if start > 0 else 0)
        if pos < 0:
            return None
        return self.span_of(pos, pos + len(key))

    def span_of(self, start: int, end: int) -> tuple[int, int]:
        """Map a normalised ``[start, end)`` range to original offsets (end just after the last char)."""
        if end <= start:
            return self.offsets[start], self.offsets[start]
        return self.offsets[start], self.offsets[end - 1] + 1


@dataclass(frozen=True)
class SpanMatch:
    """Where one copied span sits in the document.

    Attributes:
        index: position of the span in the QA pair (0-based).
        original: the span as the worker wrote it.
        status: ``exact`` (byte-for-byte substring), ``normalized`` (after case/whitespace folding),
            ``repaired`` (near miss, replaced by document text) or ``not_found``.
        text: the document text at ``[start, end)``; the original span when not found.
        start: start offset in the document, or None when not found.
        end: end offset (exclusive), or None when not found.
        distance: edit distance between the normalised span and the matched text (0 unless repaired).
    """

    index: int
    original: str
    status: str
    text: str
    start: int | None
    end: int | None
    distance: int

    @property
    def found(self) -> bool:
        """True unless the span could not be located."""
        return self.status != NOT_FOUND

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def normalize_document(text: str) -> NormalizedDocument:
    """Lowercase and collapse whitespace, remembering where each kept character came from.

    Args:
        text: the document.

    Returns:
        The normalised document with its offset map. Leading/trailing whitespace is dropped.
    """
    chars: list[str] = []
    offsets: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            pending_space = bool(chars)
            continue
        if pending_space:
            chars.append(" ")
            offsets.append(i - 1)
            pending_space = False
        lowered = ch.lower()
        # A few characters lowercase to two (e.g. 'İ'); keep the map one entry per output char.
        chars.extend(lowered)
        offsets.extend([i] * len(lowered))
    offsets.append(len(text))
    return NormalizedDocument(original=text, text="".join(chars), offsets=tuple(offsets))


def normalize_text(text: str) -> str:
    """Lowercase and collapse whitespace (the comparison used for spans)."""
    return _WHITESPACE.sub(" ", text).strip().lower()


def _near_match(needle: str, doc: NormalizedDocument, max_edits: int) -> tuple[int, int, int] | None:
    """Best document substring within ``max_edits`` of ``needle``: (start, end, distance) or None."""
    if len(needle) <= 2 * max_edits:
        return None  # a very short span would "match" almost anywhere
    if len(needle) > MAX_REPAIR_CHARS:
        return None  # bounded work: long spans are matched exactly or not at all
    # Imported here: the web workers import this module with every HIT kind's form and serve SciQ
    # pages, which never repair a span (rapidfuzz costs a worker about 2 MB).
    from rapidfuzz import fuzz
    from rapidfuzz.distance import Levenshtein

    alignment = fuzz.partial_ratio_alignment(needle, doc.text)
    if alignment is None or alignment.score < 100.0 * (1 - 2.0 * max_edits / len(needle)) - 1:
        return None
    best: tuple[int, int, int] | None = None
    base_start, base_end = alignment.dest_start, alignment.dest_end
    for start in range(max(0, base_start - max_edits), min(len(doc.text), base_start + max_edits) + 1):
        for end in range(max(start + 1, base_end - max_edits), min(len(doc.text), base_end + max_edits) + 1):
            distance = Levenshtein.distance(needle, doc.text[start:end], score_cutoff=max_edits)
            if distance <= max_edits and (
                best is None or (distance, end - start) < (best[2], best[1] - best[0])
            ):
                best = (start, end, distance)
    return best


def locate_span(index: int, span: str, doc: NormalizedDocument, max_edits: int = 2) -> SpanMatch:
    """Find one copied span in the document, repairing it when it is a near miss.

    Args:
        index: the span's position in its QA pair.
        span: the span as written.
        doc: the document from :func:`normalize_document`.
        max_edits: largest edit distance (in characters, after normalisation) that is repaired.

    Returns:
        The match; ``text``/``start``/``end`` point at the exact document text when found.
    """
    position = doc.original.find(span.strip()) if span.strip() else -1
    if position >= 0:
        stripped = span.strip()
        return SpanMatch(index, span, EXACT, stripped, position, position + len(stripped), 0)
    needle = normalize_text(span)
    if needle:
        position = doc.text.find(needle)
        if position >= 0:
            start, end = doc.span_of(position, position + len(needle))
            return SpanMatch(index, span, NORMALIZED, doc.original[start:end], start, end, 0)
        if max_edits > 0:
            near = _near_match(needle, doc, max_edits)
            if near is not None:
                start, end = doc.span_of(near[0], near[1])
                logger.debug(
                    "span %d repaired at distance %d: %r -> %r", index, near[2], span, doc.original[start:end]
                )
                return SpanMatch(index, span, REPAIRED, doc.original[start:end], start, end, near[2])
    return SpanMatch(index, span, NOT_FOUND, span, None, None, 0)


def locate_spans(
    spans: list[str] | tuple[str, ...], document: str | NormalizedDocument, max_edits: int = 2
) -> list[SpanMatch]:
    """Locate every non-empty span of a QA pair (see :func:`locate_span`).

    Args:
        spans: the spans in order; empty strings are skipped but keep their index.
        document: the document text, or an already normalised document (faster for many pairs).
        max_edits: largest edit distance that is repaired.

    Returns:
        One match per non-empty span.
    """
    doc = document if isinstance(document, NormalizedDocument) else normalize_document(document)
    return [locate_span(i, s, doc, max_edits) for i, s in enumerate(spans) if s and s.strip()]
