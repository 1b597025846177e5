"""Dataset statistics for the card: SyllabusQA's Table 3 (lengths) and Table 6 (types, answer sources).

Pure functions over release records. Token counts use one simple rule (runs of word characters, and
each punctuation mark, are tokens) so that numbers are comparable between releases; the card states it.
The tokenizer is injectable for those who want a model's tokenizer instead.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from exports.records import ANSWER_SOURCE_ORDER, QUESTION_TYPES, MCQRecord, QARecord, Record

TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Count word and punctuation tokens (``"10%, due Friday."`` -> 6)."""
    return len(TOKEN_RE.findall(text))


@dataclass(frozen=True)
class DocumentInfo:
    """What the card knows about one source document (syllabus or passage).

    Attributes:
        pages: page count (SyllabusQA metadata ``num_pages``), or None.
        tokens: token count of its text (see :func:`count_tokens`), or None.
    """

    pages: Optional[int] = None
    tokens: Optional[int] = None


@dataclass(frozen=True)
class Summary:
    """Mean, min and max of a list of numbers (all None for an empty list)."""

    mean: Optional[float]
    min: Optional[float]
    max: Optional[float]
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Summary:
        """Summarize ``values``; an empty list gives None fields (undefined, not 0)."""
        if not values:
            return cls(None, None, None, 0)
        return cls(round(statistics.fmean(values), 1), min(values), max(values), len(values))

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"mean": self.mean, "min": self.min, "max": self.max, "n": self.n}


def length_statistics(
    records: Sequence[Record],
    documents: Mapping[str, DocumentInfo],
    *,
    tokenize: Callable[[str], int] = count_tokens,
) -> dict[str, Summary]:
    """Table 3 of SyllabusQA for one split: pages and tokens per document, tokens per question/answer.

    Args:
        records: the split's records.
        documents: document id -> info; documents missing here are left out of the document rows.
        tokenize: token counter.

    Returns:
        ``pages_per_document``, ``tokens_per_document``, ``tokens_per_question``, ``tokens_per_answer``
        and, for MCQ records, ``tokens_per_passage``.
    """
    doc_ids = sorted({r.document_id for r in records})
    infos = [documents[d] for d in doc_ids if d in documents]
    result = {
        "pages_per_document": Summary.of([i.pages for i in infos if i.pages is not None]),
        "tokens_per_document": Summary.of([i.tokens for i in infos if i.tokens is not None]),
        "tokens_per_question": Summary.of([tokenize(r.question) for r in records]),
        "tokens_per_answer": Summary.of(
            [tokenize(r.answer if isinstance(r, QARecord) else r.correct_answer) for r in records]
        ),
    }
    mcq = [r for r in records if isinstance(r, MCQRecord)]
    if mcq:
        result["tokens_per_passage"] = Summary.of([tokenize(r.support) for r in mcq if r.has_passage])
    return result


def type_breakdown(records: Sequence[QARecord]) -> dict[str, dict[str, dict[str, Any]]]:
    """Table 6 of SyllabusQA: count and percentage per question type and per answer source.

    Unknown types are listed after the seven known ones; their answer source is ``unknown``.

    Returns:
        ``{"question_types": {type: {"count", "percent"}}, "answer_sources": {...}}``; percent is None
        for an empty split.
    """
    types = Counter(r.question_type for r in records)
    sources = Counter(r.answer_source or "unknown" for r in records)
    total = len(records)

    def table(counter: Counter[str], order: Sequence[str]) -> dict[str, dict[str, Any]]:
        names = list(order) + sorted(set(counter) - set(order))
        return {
            n: {
                "count": counter.get(n, 0),
                "percent": round(100 * counter.get(n, 0) / total, 1) if total else None,
            }
            for n in names
        }

    return {
        "question_types": table(types, QUESTION_TYPES),
        "answer_sources": table(sources, ANSWER_SOURCE_ORDER),
    }


def distinct_workers(records: Sequence[Record]) -> Optional[int]:
    """Number of distinct worker pseudonyms, or None when no record names a worker."""
    workers = {r.worker for r in records if r.worker}
    return len(workers) or None
