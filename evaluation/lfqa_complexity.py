"""Question-complexity ratings of the LFQA paper (Table 1 and appendix A.2.1), with robust parsing.

An LLM is shown the context and one generated question and answers three multiple-choice questions:

- Q1 "Is the question answerable from the given context and is unambiguous?" A. Yes / B. No
- Q2 "How much of the passage is needed as context to answer the question?" A. a sentence or two /
  B. more than 2 sentences but less than a paragraph / C. at least a third / D. most of the context
- Q3 "Does the question require multiple passes through the passage?" A. Yes / B. No

The paper reports Q2 as two groups (A/B "a sentence or less than a paragraph", C/D "at least a third or
most of the passage": :attr:`ComplexityRating.needs_long_context`), and drops questions that a majority
of three samples rates unanswerable (top_p 0.8, 0.9, 1). Our backends expose temperature, not top_p, so
the votes are drawn at temperatures 0.8, 0.9 and 1.0 (:func:`rate_complexity` with ``votes=3``) and
combined by :func:`majority_rating`.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Optional

from evaluation.factqa import JudgeCache
from evaluation.lfqa_llm import cached_chat
from evaluation.llm import ChatMessage, LLMBackend, LLMError
from evaluation.prompting import render

logger = logging.getLogger(__name__)

RATING_MAX_TOKENS = 256
VOTE_TEMPERATURES: tuple[float, ...] = (0.8, 0.9, 1.0)  # stand-ins for the paper's top_p values
CONTEXT_CHOICES: dict[str, str] = {
    "A": "only a sentence or two",
    "B": "more than 2 sentences but less than a paragraph",
    "C": "at least a third of the context",
    "D": "most of the context",
}
_VALID: dict[str, str] = {"Q1": "AB", "Q2": "ABCD", "Q3": "AB"}
_ANSWER_RE = re.compile(
    r"""['"]?\b(?P<key>Q[123])\b['"]?\s*[:.)=-]\s*['"(\[]?\s*(?P<value>[^,'"\n}\]]*)""", re.IGNORECASE
)
_LETTER_RE = re.compile(r"^\(?([A-Da-d])\s*(?:[.):]|$|\s)")
_Q2_PHRASES: tuple[tuple[str, str], ...] = (
    ("only a sentence", "A"),
    ("a sentence or two", "A"),
    ("one or two sentences", "A"),
    ("more than 2 sentences", "B"),
    ("more than two sentences", "B"),
    ("at least a third", "C"),
    ("atleast a third", "C"),
    ("a third", "C"),
    ("most of", "D"),
)

Source = Literal["judge", "cache", "error", "vote"]


@dataclass(frozen=True)
class ComplexityRating:
    """One rating of a question (or the majority of several).

    Attributes:
        answerable: Q1 (answerable and unambiguous); None when it could not be read.
        context_needed: Q2's letter A-D (see :data:`CONTEXT_CHOICES`); None when it could not be read.
        multi_pass: Q3 (needs several passes through the passage); None when it could not be read.
        explanation: the rater's explanation (text after its choices), "" when none.
        response: the raw reply (None after a backend failure or for a majority).
        source: ``judge`` (asked now), ``cache``, ``error`` (backend failed) or ``vote`` (majority).
        votes: how many ratings a majority combines (1 for a single rating).
    """

    answerable: Optional[bool]
    context_needed: Optional[str]
    multi_pass: Optional[bool]
    explanation: str = ""
    response: Optional[str] = None
    source: Source = "judge"
    votes: int = 1

    @property
    def parsed(self) -> bool:
        """True when all three answers were read."""
        return None not in (self.answerable, self.context_needed, self.multi_pass)

    @property
    def needs_long_context(self) -> Optional[bool]:
        """Q2 as the paper reports it: True for "at least a third or most of the passage" (C or D)."""
        if self.context_needed is None:
            return None
        return self.context_needed in ("C", "D")

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict (without the raw reply)."""
        return {
            "answerable": self.answerable,
            "context_needed": self.context_needed,
            "context_needed_label": CONTEXT_CHOICES.get(self.context_needed or ""),
            "needs_long_context": self.needs_long_context,
            "multi_pass": self.multi_pass,
            "explanation": self.explanation,
            "source": self.source,
            "votes": self.votes,
        }


def _read_value(key: str, value: str) -> Optional[str]:
    """Map one answer ("A", "A. Yes", "yes", "C. Atleast a third ...") to its letter, None if invalid."""
    text = value.strip().strip("*").strip()
    letter = _LETTER_RE.match(text)
    if letter:
        choice = letter.group(1).upper()
        return choice if choice in _VALID[key] else None
    lowered = text.lower()
    if key in ("Q1", "Q3"):
        if re.match(r"^yes\b", lowered):
            return "A"
        if re.match(r"^no\b", lowered):
            return "B"
        return None
    for phrase, choice in _Q2_PHRASES:
        if lowered.startswith(phrase):
            return choice
    return None


def parse_complexity(reply: str) -> tuple[Optional[bool], Optional[str], Optional[bool], str]:
    """Read Q1-Q3 from a rater reply: a dictionary ("'Q1': 'A'"), JSON, or lines ("Q2: C. At least ...").

    For each question the last readable answer wins (a reply that first echoes the prompt's choices
    still ends with its own). Letters outside a question's choices ("Q1: C") are rejected.

    Args:
        reply: the rater's reply.

    Returns:
        (answerable, context letter, multi_pass, explanation); None where an answer could not be read.
    """
    found: dict[str, str] = {}
    last_end = 0
    for match in _ANSWER_RE.finditer(reply):
        key = match.group("key").upper()
        choice = _read_value(key, match.group("value"))
        if choice is None:
            continue
        found[key] = choice
        last_end = max(last_end, match.end())
    explanation = reply[last_end:].lstrip(" '\"}),.\n").strip() if found else ""
    q1, q3 = found.get("Q1"), found.get("Q3")
    return (
        None if q1 is None else q1 == "A",
        found.get("Q2"),
        None if q3 is None else q3 == "A",
        explanation,
    )


def complexity_messages(question: str, context: str) -> list[ChatMessage]:
    """Build the appendix A.2.1 rating prompt for one question under its context."""
    return [ChatMessage("user", render("lfqa_complexity", context=context, question=question))]


def _majority(values: Sequence[object]) -> Optional[object]:
    counts = Counter(v for v in values if v is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def majority_rating(ratings: Sequence[ComplexityRating]) -> ComplexityRating:
    """Combine several ratings of one question by majority vote per answer (a tie gives None).

    Raises:
        ValueError: no ratings.
    """
    if not ratings:
        raise ValueError("majority_rating needs at least one rating")
    answerable = _majority([r.answerable for r in ratings])
    context = _majority([r.context_needed for r in ratings])
    multi = _majority([r.multi_pass for r in ratings])
    return ComplexityRating(
        answerable=answerable if isinstance(answerable, bool) else None,
        context_needed=context if isinstance(context, str) else None,
        multi_pass=multi if isinstance(multi, bool) else None,
        explanation=next((r.explanation for r in ratings if r.explanation), ""),
        response=None,
        source="vote",
        votes=len(ratings),
    )


def rate_complexity(
    question: str,
    backend: LLMBackend,
    *,
    context: str,
    cache: Optional[JudgeCache] = None,
    votes: int = 1,
    temperatures: Sequence[float] = VOTE_TEMPERATURES,
    max_new_tokens: int = RATING_MAX_TOKENS,
) -> ComplexityRating:
    """Rate one question's complexity under its context (Table 1's three questions).

    Backend failures and unreadable replies are logged and give None answers, so one bad call never
    stops a batch of questions.

    Args:
        question: the generated question.
        backend: the rating LLM.
        context: the passage the question must be answered from (see
            :func:`evaluation.lfqa_sections.select_context` for long documents).
        cache: reply cache.
        votes: 1 asks once, greedily; more draws that many samples at ``temperatures`` (cycled) and
            returns their :func:`majority_rating`.
        temperatures: sampling temperatures of the votes.
        max_new_tokens: generation budget.

    Returns:
        The rating.

    Raises:
        ValueError: ``votes`` < 1.
    """
    if votes < 1:
        raise ValueError(f"votes={votes} must be at least 1")
    messages = complexity_messages(question, context)
    ratings: list[ComplexityRating] = []
    for sample in range(votes):
        temperature = 0.0 if votes == 1 else temperatures[sample % len(temperatures)]
        try:
            reply, from_cache = cached_chat(
                backend,
                messages,
                cache,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                sample=sample,
            )
        except LLMError as error:
            logger.warning("LFQA complexity rating failed for question %r: %s", question[:80], error)
            ratings.append(ComplexityRating(None, None, None, source="error"))
            continue
        answerable, context_needed, multi_pass, explanation = parse_complexity(reply)
        rating = ComplexityRating(
            answerable, context_needed, multi_pass, explanation, reply, "cache" if from_cache else "judge"
        )
        if not rating.parsed:
            logger.warning(
                "LFQA complexity reply for question %r is missing answers (Q1=%s Q2=%s Q3=%s): %r",
                question[:80],
                answerable,
                context_needed,
                multi_pass,
                reply[-200:],
            )
        ratings.append(rating)
    return ratings[0] if votes == 1 else majority_rating(ratings)
