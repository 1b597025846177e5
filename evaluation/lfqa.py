"""Long-form QA after Bhat et al. (papers/lfqa-answerability.txt): the one import for the LFQA pieces.

- Question generation from summaries of long documents: :func:`generate_questions`
  (sections -> section summaries -> document summary -> top-n follow-up questions).
- Question-complexity ratings (Table 1: answerable, context needed, multiple passes): :func:`rate_complexity`.
- Both at once for one document: :func:`generate_rated_questions` (``manage.py lfqa_questions``).
- The 4-criteria answer judge (coherence, relevance, factual consistency, accuracy; 0-3):
  :func:`judge_item_scores` for a run, :func:`judge_answer` for one answer.

The pieces live in ``lfqa_sections`` (passages, context selection), ``lfqa_generation``,
``lfqa_complexity`` and ``lfqa_judge``; every LLM call is cached through ``lfqa_llm.cached_chat``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from evaluation.factqa import JudgeCache
from evaluation.lfqa_complexity import (
    CONTEXT_CHOICES,
    ComplexityRating,
    majority_rating,
    parse_complexity,
    rate_complexity,
)
from evaluation.lfqa_generation import (
    DocumentSummary,
    GeneratedQuestion,
    SectionSummary,
    Setting,
    generate_questions,
    parse_questions,
    summarize_document,
)
from evaluation.lfqa_judge import CRITERIA, LfqaJudgement, judge_answer, judge_item_scores, parse_judge_scores
from evaluation.lfqa_sections import NON_INFORMATIVE_SECTIONS, Section, select_context, split_sections
from evaluation.llm import LLMBackend

__all__ = [
    "CONTEXT_CHOICES",
    "CRITERIA",
    "NON_INFORMATIVE_SECTIONS",
    "ComplexityRating",
    "DocumentSummary",
    "GeneratedQuestion",
    "LfqaJudgement",
    "RatedQuestion",
    "Section",
    "SectionSummary",
    "generate_questions",
    "generate_rated_questions",
    "judge_answer",
    "judge_item_scores",
    "majority_rating",
    "parse_complexity",
    "parse_judge_scores",
    "parse_questions",
    "rate_complexity",
    "select_context",
    "split_sections",
    "summarize_document",
]


@dataclass(frozen=True)
class RatedQuestion:
    """A generated question with its complexity rating (what ``manage.py lfqa_questions`` reports)."""

    question: GeneratedQuestion
    rating: ComplexityRating

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict: the question fields plus ``complexity``."""
        return {**self.question.to_dict(), "complexity": self.rating.to_dict()}


def generate_rated_questions(
    document_text: str,
    backend: LLMBackend,
    n: int = 3,
    *,
    title: str = "the document",
    domain: str = "general",
    setting: Setting = "summary",
    votes: int = 1,
    cache: Optional[JudgeCache] = None,
    progress: Optional[Callable[[str, int, int], None]] = None,
) -> list[RatedQuestion]:
    """Generate questions about a document and rate each one's complexity against the document.

    The rater sees the source passage, as in the paper (not the summary): the document itself, or for a
    long one its parts most relevant to the question (:func:`select_context`, the paper's 2k-token cap).

    Args:
        document_text: the whole document.
        backend: the LLM used for every step.
        n: how many questions.
        title / domain: for the summary prompt.
        setting: ``summary`` (QG-Summary) or ``passage`` (QG-Passage).
        votes: complexity samples per question (paper: 3, majority vote).
        cache: reply cache.
        progress: called with (stage, done, total); stages ``generate`` and ``rate``.

    Returns:
        The questions, most complex first, with their ratings.

    Raises:
        ValueError: see :func:`generate_questions`.
        LLMError: the backend failed during generation (rating failures only leave None answers).
    """

    def stage(name: str) -> Optional[Callable[[int, int], None]]:
        if progress is None:
            return None
        return lambda done, total: progress(name, done, total)

    questions = generate_questions(
        document_text,
        backend,
        n,
        title=title,
        domain=domain,
        setting=setting,
        cache=cache,
        progress=stage("generate"),
    )
    rated: list[RatedQuestion] = []
    rate_progress = stage("rate")
    for done, question in enumerate(questions, start=1):
        context = select_context(document_text, question.question)
        rating = rate_complexity(question.question, backend, context=context, cache=cache, votes=votes)
        rated.append(RatedQuestion(question, rating))
        if rate_progress is not None:
            rate_progress(done, len(questions))
    return rated
