"""Dataset statistics for the card: SyllabusQA's Table 3 (lengths) and Table 6 (types, answer sources).

Pure functions over release records. Token counts use one simple rule (runs of word characters, and
each punctuation mark, are tokens) so that numbers are comparable between releases; the card states it.
The tokenizer is injectable for those who want a model's tokenizer instead.

:class:`SplitStatistics` gathers everything the card and its plots need from records seen one at a time
(counts and length histograms, bounded by the number of distinct lengths, documents and workers), so a
release of any size is described without holding its records; the functions over record lists use it.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from exports.records import ANSWER_SOURCE_ORDER, QUESTION_TYPES, QARecord, Record

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

    @classmethod
    def of_counts(cls, counts: Mapping[int, int]) -> Summary:
        """Summarize integer values given as value -> occurrences (a histogram).

        The mean is the exact sum over the count, rounded once, so it equals :meth:`of` over the same
        values (``statistics.fmean`` of integers is their exact sum divided by their number).
        """
        n = sum(counts.values())
        if not n:
            return cls(None, None, None, 0)
        total = sum(value * times for value, times in counts.items())
        return cls(round(total / n, 1), min(counts), max(counts), n)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"mean": self.mean, "min": self.min, "max": self.max, "n": self.n}


@dataclass
class SplitStatistics:
    """The card's statistics of one split, gathered from records seen one at a time.

    Attributes:
        records: records seen.
        mcq: multiple-choice records among them.
        documents: distinct document ids.
        question_tokens: tokens per question -> questions.
        answer_tokens: tokens per answer -> answers.
        passage_tokens: tokens per released passage -> multiple-choice records with a passage.
        question_types: question type -> QA records.
        answer_sources: answer source (``unknown`` for an unknown type) -> QA records.
        distractor_counts: number of distractors -> multiple-choice records.
        workers: distinct worker pseudonyms.
        model_checked: question type -> QA records with a model-in-the-loop verdict (``model_verdict``).
        model_fooled: question type -> those whose verdict is ``fooled``.
        model_setups: ``system / judge / version`` -> QA records checked with it.
        model_validated: question type -> fooled records a second worker validated (``model_validation``).
        model_confirmed: question type -> those the validator confirmed (the model was wrong).
        options_only_checked: multiple-choice records a model tried from the options alone.
        options_only_answered: those it answered (``options_only_answered``).
        options_only_models: scoring model -> multiple-choice records it checked.
    """

    records: int = 0
    mcq: int = 0
    documents: set[str] = field(default_factory=set)
    question_tokens: Counter[int] = field(default_factory=Counter)
    answer_tokens: Counter[int] = field(default_factory=Counter)
    passage_tokens: Counter[int] = field(default_factory=Counter)
    question_types: Counter[str] = field(default_factory=Counter)
    answer_sources: Counter[str] = field(default_factory=Counter)
    distractor_counts: Counter[int] = field(default_factory=Counter)
    workers: set[str] = field(default_factory=set)
    model_checked: Counter[str] = field(default_factory=Counter)
    model_fooled: Counter[str] = field(default_factory=Counter)
    model_setups: Counter[str] = field(default_factory=Counter)
    model_validated: Counter[str] = field(default_factory=Counter)
    model_confirmed: Counter[str] = field(default_factory=Counter)
    options_only_checked: int = 0
    options_only_answered: int = 0
    options_only_models: Counter[str] = field(default_factory=Counter)

    def add(self, record: Record, tokenize: Callable[[str], int] = count_tokens) -> None:
        """Count one record."""
        self.records += 1
        self.documents.add(record.document_id)
        self.question_tokens[tokenize(record.question)] += 1
        if isinstance(record, QARecord):
            self.answer_tokens[tokenize(record.answer)] += 1
            self.question_types[record.question_type] += 1
            self.answer_sources[record.answer_source or "unknown"] += 1
            verdict = record.extra.get("model_verdict")
            if verdict:
                self.model_checked[record.question_type] += 1
                self.model_fooled[record.question_type] += verdict == "fooled"
                setup = (record.extra.get(k) or "?" for k in ("model_system", "model_judge", "model_version"))
                self.model_setups[" / ".join(map(str, setup))] += 1
                validation = record.extra.get("model_validation")
                if verdict == "fooled" and validation:
                    self.model_validated[record.question_type] += 1
                    self.model_confirmed[record.question_type] += validation == "confirmed"
        else:
            self.mcq += 1
            self.answer_tokens[tokenize(record.correct_answer)] += 1
            if record.has_passage:
                self.passage_tokens[tokenize(record.support)] += 1
            self.distractor_counts[len(record.distractors)] += 1
            answered = record.extra.get("options_only_answered")
            if answered is not None:
                self.options_only_checked += 1
                self.options_only_answered += bool(answered)
                self.options_only_models[str(record.extra.get("options_only_model") or "?")] += 1
        if record.worker:
            self.workers.add(record.worker)

    @classmethod
    def of(cls, records: Iterable[Record], tokenize: Callable[[str], int] = count_tokens) -> SplitStatistics:
        """The statistics of ``records``."""
        stats = cls()
        for record in records:
            stats.add(record, tokenize)
        return stats

    @classmethod
    def merged(cls, parts: Iterable[SplitStatistics]) -> SplitStatistics:
        """The statistics of several splits together."""
        total = cls()
        for part in parts:
            total.records += part.records
            total.mcq += part.mcq
            total.documents |= part.documents
            total.question_tokens.update(part.question_tokens)
            total.answer_tokens.update(part.answer_tokens)
            total.passage_tokens.update(part.passage_tokens)
            total.question_types.update(part.question_types)
            total.answer_sources.update(part.answer_sources)
            total.distractor_counts.update(part.distractor_counts)
            total.workers |= part.workers
            total.model_checked.update(part.model_checked)
            total.model_fooled.update(part.model_fooled)
            total.model_setups.update(part.model_setups)
            total.model_validated.update(part.model_validated)
            total.model_confirmed.update(part.model_confirmed)
            total.options_only_checked += part.options_only_checked
            total.options_only_answered += part.options_only_answered
            total.options_only_models.update(part.options_only_models)
        return total

    def lengths(self, documents: Mapping[str, DocumentInfo]) -> dict[str, Summary]:
        """Table 3 of SyllabusQA for this split (see :func:`length_statistics`)."""
        infos = [documents[d] for d in sorted(self.documents) if d in documents]
        result = {
            "pages_per_document": Summary.of([i.pages for i in infos if i.pages is not None]),
            "tokens_per_document": Summary.of([i.tokens for i in infos if i.tokens is not None]),
            "tokens_per_question": Summary.of_counts(self.question_tokens),
            "tokens_per_answer": Summary.of_counts(self.answer_tokens),
        }
        if self.mcq:
            result["tokens_per_passage"] = Summary.of_counts(self.passage_tokens)
        return result

    def breakdown(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Table 6 of SyllabusQA for this split (see :func:`type_breakdown`)."""
        total = self.records - self.mcq

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
            "question_types": table(self.question_types, QUESTION_TYPES),
            "answer_sources": table(self.answer_sources, ANSWER_SOURCE_ORDER),
        }

    def distinct_workers(self) -> Optional[int]:
        """Number of distinct worker pseudonyms, or None when no record names a worker."""
        return len(self.workers) or None


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
    return SplitStatistics.of(records, tokenize).lengths(documents)


def type_breakdown(records: Sequence[QARecord]) -> dict[str, dict[str, dict[str, Any]]]:
    """Table 6 of SyllabusQA: count and percentage per question type and per answer source.

    Unknown types are listed after the seven known ones; their answer source is ``unknown``.

    Returns:
        ``{"question_types": {type: {"count", "percent"}}, "answer_sources": {...}}``; percent is None
        for an empty split.
    """
    return SplitStatistics.of(records).breakdown()


def distinct_workers(records: Sequence[Record]) -> Optional[int]:
    """Number of distinct worker pseudonyms, or None when no record names a worker."""
    return SplitStatistics.of(records).distinct_workers()
