"""Question generation from summaries of long documents (LFQA paper, section 3.2 and appendix A.1).

Bhat et al. generate "follow-up" questions in two steps: (1) summarize a passage "in the context of
{title} in {domain}", (2) ask for follow-up questions on the summary, ranked by decreasing complexity,
keeping the top 3 (QG-Summary). Their baseline asks the same of the passage itself (QG-Passage).
Questions from summaries need more of the document to answer (their Table 2), which is the point.

The paper's passages fit in 2k tokens. Our documents (syllabi, chapters) are often longer, so we
summarize hierarchically: each section-wise passage of :func:`evaluation.lfqa_sections.split_sections`
is summarized with the paper's prompt, then the section summaries (joined in order) are summarized again
with the same prompt into one document summary, repeating while they exceed the 2k-token cap. A document
that fits in one section gets a single summary, exactly as in the paper.

Every call is cached through :func:`evaluation.lfqa_llm.cached_chat` (key: backend name + prompt).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Optional

from evaluation.factqa import JudgeCache
from evaluation.lfqa_llm import cached_chat
from evaluation.lfqa_sections import (
    MAX_CONTEXT_TOKENS,
    MIN_SECTION_TOKENS,
    Section,
    TokenCounter,
    spacy_token_count,
    split_sections,
)
from evaluation.llm import ChatMessage, LLMBackend
from evaluation.prompting import render
from evaluation.schema import ProgressCallback

logger = logging.getLogger(__name__)

Setting = Literal["summary", "passage"]
PAPER_QUESTIONS_PER_CONTEXT = 3  # "display only the top 3"
SUMMARY_MAX_TOKENS = 256
QUESTIONS_MAX_TOKENS = 256

_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
_MARKER_RE = re.compile(
    r"^\s*(?:\*\*)?\s*(?:(?:question|q)\s*\d+\s*[:.)-]|\(?\d+\s*[.):-]|[-*\u2022])\s*(?:\*\*)?\s*",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SectionSummary:
    """The summary of one section-wise passage."""

    section: Section
    summary: str


@dataclass(frozen=True)
class DocumentSummary:
    """Section summaries and the document summary built from them.

    Attributes:
        sections: one summary per section, in document order.
        summary: the document summary (the only section's summary when there is one section).
        levels: how many summarization rounds above the sections were needed (0 for one section).
    """

    sections: tuple[SectionSummary, ...]
    summary: str
    levels: int


@dataclass(frozen=True)
class GeneratedQuestion:
    """One generated question with where it came from.

    Attributes:
        question: the question text.
        summary_source: the summary the question was generated from (None in the passage setting).
        context: the text shown to the question generator (the summary, or the passage).
        rank: 1 for the most complex question of its context (the paper ranks by complexity).
        setting: ``summary`` (QG-Summary) or ``passage`` (QG-Passage, the paper's baseline).
        section_index: the section of the passage setting (None for the document summary).
    """

    question: str
    summary_source: Optional[str]
    context: str
    rank: int
    setting: Setting
    section_index: Optional[int] = None

    def to_dict(self) -> dict[str, object]:
        """Return a JSON-ready dict."""
        return {
            "question": self.question,
            "summary_source": self.summary_source,
            "context": self.context,
            "rank": self.rank,
            "setting": self.setting,
            "section_index": self.section_index,
        }


def summarize_passage(
    passage: str,
    backend: LLMBackend,
    *,
    title: str,
    domain: str,
    cache: Optional[JudgeCache] = None,
    max_new_tokens: int = SUMMARY_MAX_TOKENS,
) -> str:
    """Summarize one passage with the paper's prompt ("Summarize the paragraphs below in the context of ...").

    Raises:
        LLMError: the backend failed.
    """
    prompt = render("lfqa_summarize", title=title, domain=domain, passage=passage)
    reply, _ = cached_chat(backend, [ChatMessage("user", prompt)], cache, max_new_tokens=max_new_tokens)
    return reply.strip()


def _batches(texts: Sequence[str], max_tokens: int, count: TokenCounter) -> list[list[str]]:
    """Group consecutive texts so that each group's token count stays within ``max_tokens``."""
    groups: list[list[str]] = [[]]
    size = 0
    for text in texts:
        tokens = count(text)
        if groups[-1] and size + tokens > max_tokens:
            groups.append([])
            size = 0
        groups[-1].append(text)
        size += tokens
    return groups


def summarize_document(
    document_text: str,
    backend: LLMBackend,
    *,
    title: str = "the document",
    domain: str = "general",
    cache: Optional[JudgeCache] = None,
    min_tokens: int = MIN_SECTION_TOKENS,
    max_tokens: int = MAX_CONTEXT_TOKENS,
    count_tokens: TokenCounter = spacy_token_count,
    progress: Optional[ProgressCallback] = None,
    sections: Optional[Sequence[Section]] = None,
) -> DocumentSummary:
    """Summarize each section-wise passage, then the section summaries into one document summary.

    Args:
        document_text: the whole document.
        backend: the LLM.
        title: the document's title (the paper gives the article title).
        domain: its domain (the paper gives the Wikipedia category, e.g. "Physics").
        cache: reply cache.
        min_tokens / max_tokens: section sizes (paper: 256 and 2k tokens).
        count_tokens: token counter.
        progress: called with (sections summarized, sections total).
        sections: precomputed sections (default: :func:`split_sections` of the text).

    Returns:
        The section summaries and the document summary.

    Raises:
        ValueError: the document has no text.
        LLMError: the backend failed.
    """
    if sections is None:
        sections = split_sections(
            document_text, min_tokens=min_tokens, max_tokens=max_tokens, count_tokens=count_tokens
        )
    if not sections:
        raise ValueError(f"document '{title}' has no text to summarize")
    common = {"title": title, "domain": domain, "cache": cache}
    summaries: list[SectionSummary] = []
    for done, section in enumerate(sections, start=1):
        summaries.append(SectionSummary(section, summarize_passage(section.text, backend, **common)))
        if progress is not None:
            progress(done, len(sections))
    level_texts = [s.summary for s in summaries]
    levels = 0
    while len(level_texts) > 1:
        levels += 1
        groups = _batches(level_texts, max_tokens, count_tokens)
        if len(groups) == len(level_texts) and levels > 1:
            # every summary fills the budget alone: summarizing again would not shrink the list
            logger.warning("LFQA summary of '%s': summaries do not shrink; joining %d", title, len(groups))
            level_texts = ["\n\n".join(level_texts)]
            break
        level_texts = [summarize_passage("\n\n".join(group), backend, **common) for group in groups]
    return DocumentSummary(tuple(summaries), level_texts[0], levels)


def parse_questions(reply: str, limit: Optional[int] = None) -> list[str]:
    """Read the generated questions from a reply (numbered, bulleted or plain lines).

    Lines with a question mark are questions (text up to the last "?"); when no line has one, the
    numbered or bulleted lines are taken. Introductions ("Here are the top 3 questions:") are skipped,
    duplicates (case-insensitive) dropped.

    Args:
        reply: the generator's reply.
        limit: keep at most this many (the ranking's top).

    Returns:
        The questions in the order given (most complex first, as the prompt asks).
    """
    asked: list[str] = []
    listed: list[str] = []
    for raw in reply.splitlines():
        line = raw.strip()
        if not line:
            continue
        marker = _MARKER_RE.match(line)
        body = line[marker.end() :] if marker else line
        body = body.strip().strip("*\"'\u201c\u201d ").strip()
        if not body:
            continue
        if "?" in body:
            asked.append(body[: body.rindex("?") + 1].strip().strip("*\"'\u201c\u201d "))
        elif marker and not body.endswith(":"):
            listed.append(body)
    found = asked or listed
    seen: set[str] = set()
    out: list[str] = []
    for question in found:
        key = re.sub(r"\s+", " ", question.lower())
        if key in seen or len(key) < 3:
            continue
        seen.add(key)
        out.append(question)
    return out[:limit] if limit is not None else out


def number_words(n: int) -> str:
    """Spell small counts as the paper's prompt does ("three"); larger ones stay digits."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def question_messages(context: str, n: int, setting: Setting) -> list[ChatMessage]:
    """Build the QG-Summary ("follow-up questions") or QG-Passage ("n questions") prompt of appendix A.1."""
    if setting == "summary":
        prompt = render("lfqa_questions_summary", n=str(n), context=context)
    else:
        prompt = render("lfqa_questions_passage", n=str(n), n_words=number_words(n), context=context)
    return [ChatMessage("user", prompt)]


def generate_questions(
    document_text: str,
    backend: LLMBackend,
    n: int = PAPER_QUESTIONS_PER_CONTEXT,
    *,
    title: str = "the document",
    domain: str = "general",
    setting: Setting = "summary",
    cache: Optional[JudgeCache] = None,
    min_tokens: int = MIN_SECTION_TOKENS,
    max_tokens: int = MAX_CONTEXT_TOKENS,
    count_tokens: TokenCounter = spacy_token_count,
    progress: Optional[ProgressCallback] = None,
    max_new_tokens: int = QUESTIONS_MAX_TOKENS,
) -> list[GeneratedQuestion]:
    """Generate up to ``n`` complex questions about a long document.

    ``summary`` (the paper's method): summarize the document (:func:`summarize_document`) and ask for the
    top-``n`` follow-up questions on the document summary. ``passage`` (the paper's baseline): ask each
    section-wise passage for its top-``n`` questions and interleave them by rank (all rank-1 questions
    first, in document order) until ``n`` are collected.

    Args:
        document_text: the whole document.
        backend: the LLM.
        n: how many questions (paper: 3).
        title: the document's title, for the summary prompt.
        domain: the document's domain, for the summary prompt.
        setting: ``summary`` or ``passage``.
        cache: reply cache.
        min_tokens / max_tokens: section sizes (paper: 256 / 2k tokens).
        count_tokens: token counter.
        progress: called with (steps done, steps total) over the LLM calls.
        max_new_tokens: generation budget of the question call.

    Returns:
        The questions, most complex first; fewer than ``n`` when the model gave fewer (logged).

    Raises:
        ValueError: ``n`` < 1, an unknown setting, or a document without text.
        LLMError: the backend failed.
    """
    if n < 1:
        raise ValueError(f"n={n} must be at least 1")
    if setting not in ("summary", "passage"):
        raise ValueError(f"unknown setting '{setting}'; choose 'summary' or 'passage'")
    sections = split_sections(
        document_text, min_tokens=min_tokens, max_tokens=max_tokens, count_tokens=count_tokens
    )
    if not sections:
        raise ValueError(f"document '{title}' has no text to generate questions from")
    if setting == "summary":
        total = len(sections) + 1

        def summary_progress(done: int, _total: int) -> None:
            if progress is not None:
                progress(done, total)

        summary = summarize_document(
            document_text,
            backend,
            title=title,
            domain=domain,
            cache=cache,
            count_tokens=count_tokens,
            max_tokens=max_tokens,
            progress=summary_progress,
            sections=sections,
        )
        reply, _ = cached_chat(
            backend, question_messages(summary.summary, n, "summary"), cache, max_new_tokens=max_new_tokens
        )
        if progress is not None:
            progress(total, total)
        questions = [
            GeneratedQuestion(q, summary.summary, summary.summary, rank, "summary")
            for rank, q in enumerate(parse_questions(reply, n), start=1)
        ]
    else:
        per_section: list[list[GeneratedQuestion]] = []
        for done, section in enumerate(sections, start=1):
            reply, _ = cached_chat(
                backend, question_messages(section.text, n, "passage"), cache, max_new_tokens=max_new_tokens
            )
            per_section.append(
                [
                    GeneratedQuestion(q, None, section.text, rank, "passage", section.index)
                    for rank, q in enumerate(parse_questions(reply, n), start=1)
                ]
            )
            if progress is not None:
                progress(done, len(sections))
        by_rank = sorted(
            (q for group in per_section for q in group), key=lambda q: (q.rank, q.section_index or 0)
        )
        questions = by_rank[:n]
    if len(questions) < n:
        logger.warning(
            "LFQA questions for '%s' (%s setting): asked for %d, the model gave %d",
            title,
            setting,
            n,
            len(questions),
        )
    return questions
