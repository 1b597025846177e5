"""The LFQA paper's 4-criteria LLM answer judge: coherence, relevance, factual consistency, accuracy (0-3).

Bhat et al. (papers/lfqa-answerability.txt, section 4.1 and appendix A.3.1) ask GPT-4 to rate answers
on a 0-3 scale for four criteria, with the context (the source passage) shown above the question and
two assistants' answers rated individually. Their prompt follows the layout of FastChat's pairwise
reviewer ("... based on the context displayed above"), which the paper does not print; we use that
layout: ``[Context]``, ``[Question]``, then each answer between ``[The Start/End of Assistant N's
Answer]`` lines, then the paper's instruction verbatim (``prompts/lfqa_judge_*.txt``).

Which answers: Assistant 1 is the system's prediction; Assistant 2 is the dataset's reference answer
(``item.answer``) when there is one, as in the paper's proxy test where human answers were rated beside
model answers; only Assistant 1's scores are returned. Without a reference the single-answer variant of
the prompt is used (our wording; the paper only printed the two-assistant prompt). The context is the
source document (``item.document``); a document over the paper's 2k-token cap is cut to the chunks most
relevant to the question and reference (:func:`evaluation.lfqa_sections.select_context`).

Parsing and retries: scores are read from the paper's dictionary format, JSON, or lines such as
"Coherence: 2"; a value outside 0-3 (or not an integer) is rejected. When a criterion is missing, the
judge is asked once more in the same conversation for a JSON object (``prompts/lfqa_judge_repair.txt``).
A criterion still missing is None and logged; a backend failure (HTTP error, timeout after the backend's
own retries) gives None for all four and is logged, so one failure never stops a run. Every reply is
cached by :func:`evaluation.factqa.cache_key` of the backend name and the conversation.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Optional

from evaluation.factqa import JudgeCache
from evaluation.lfqa_llm import cached_chat
from evaluation.lfqa_sections import MAX_CONTEXT_CHARS, select_context
from evaluation.llm import ChatMessage, LLMBackend, LLMError
from evaluation.metrics import align
from evaluation.prompting import load_template, render
from evaluation.schema import Prediction, ProgressCallback, QAItem

logger = logging.getLogger(__name__)

CRITERIA: tuple[str, ...] = ("coherence", "relevance", "factual_consistency", "accuracy")
SCORE_MIN, SCORE_MAX = 0, 3
JUDGE_MAX_TOKENS = 500
REPAIR_MAX_TOKENS = 100
NO_CONTEXT = "(no context given)"

_CRITERION_RE = re.compile(
    r"(?P<name>coheren(?:ce|cy)|relevan(?:ce|cy)|factual[\s_-]*consisten(?:cy|ce)|consistency|accuracy)"
    r"['\"*]*\s*(?:[:=-]|\bis\b)\s*['\"*]*\s*(?P<value>[-+]?\d+(?:\.\d+)?)"
    r"(?:\s*(?:/|out\s+of)\s*(?P<total>\d+))?",
    re.IGNORECASE,
)
_ASSISTANT_RE = re.compile(r"assistant\s*#?\s*(?P<number>\d)", re.IGNORECASE)

Source = Literal["judge", "cache", "error"]


@dataclass(frozen=True)
class LfqaJudgement:
    """The judge's scores for one answer.

    Attributes:
        scores: criterion -> 0..3, None where no valid score was read.
        response: the judge's first reply (None after a backend failure).
        source: ``judge`` (asked now), ``cache`` (first reply from the cache) or ``error``.
        repaired: True when a second, format-only request was needed.
    """

    scores: dict[str, Optional[float]] = field(default_factory=dict)
    response: Optional[str] = None
    source: Source = "judge"
    repaired: bool = False

    @property
    def complete(self) -> bool:
        """True when every criterion has a score."""
        return all(self.scores.get(name) is not None for name in CRITERIA)


def _criterion(name: str) -> str:
    lowered = name.lower()
    if lowered.startswith("coheren"):
        return "coherence"
    if lowered.startswith("relevan"):
        return "relevance"
    if lowered.startswith("accuracy"):
        return "accuracy"
    return "factual_consistency"


def _valid(value: str, total: Optional[str]) -> Optional[float]:
    """Return the score when it is an integer in 0..3 (on a /3 scale if a total is given), else None."""
    number = float(value)
    if total is not None and int(total) != SCORE_MAX:
        return None
    if not number.is_integer() or not SCORE_MIN <= number <= SCORE_MAX:
        return None
    return float(number)


def parse_judge_scores(reply: str, assistant: int = 1) -> dict[str, Optional[float]]:
    """Read one assistant's four scores from a judge reply.

    Accepts the paper's dictionary format ("'Assistant 1': 'coherence': 3, ..."), nested JSON
    (``{"Assistant 1": {"coherence": 3, ...}}``), flat JSON and lines ("Coherence: 2", "**Accuracy** - 3",
    "relevance: 2/3"). A score belongs to the assistant most recently named before it (the first
    assistant when none is named yet); the first score of a criterion wins. Scores that are not integers
    in 0..3 are rejected (None), as are scores on another scale ("8/10").

    Args:
        reply: the judge's reply.
        assistant: whose scores to read (1 = the prediction).

    Returns:
        criterion -> score or None, for every criterion in :data:`CRITERIA`.
    """
    mentions = [(m.start(), int(m.group("number"))) for m in _ASSISTANT_RE.finditer(reply)]
    scores: dict[str, Optional[float]] = {name: None for name in CRITERIA}
    seen: set[str] = set()
    for match in _CRITERION_RE.finditer(reply):
        owner = 1
        for position, number in mentions:
            if position > match.start():
                break
            owner = number
        name = _criterion(match.group("name"))
        if owner != assistant or name in seen:
            continue
        seen.add(name)
        value = _valid(match.group("value"), match.group("total"))
        if value is None:
            logger.warning("LFQA judge: %s score %r is outside 0-3, rejected", name, match.group(0))
        scores[name] = value
    return scores


def judge_messages(
    question: str, answer: str, *, context: str, reference: Optional[str]
) -> list[ChatMessage]:
    """Build the appendix A.3.1 judge conversation (system prompt + FastChat-style user turn)."""
    context = context.strip() or NO_CONTEXT
    if reference and reference.strip():
        user = render(
            "lfqa_judge_user", context=context, question=question, answer_1=answer, answer_2=reference
        )
    else:
        user = render("lfqa_judge_user_single", context=context, question=question, answer_1=answer)
    return [ChatMessage("system", load_template("lfqa_judge_system")), ChatMessage("user", user)]


def judge_answer(
    question: str,
    answer: str,
    backend: LLMBackend,
    *,
    context: str,
    reference: Optional[str] = None,
    cache: Optional[JudgeCache] = None,
    repair: bool = True,
    max_new_tokens: int = JUDGE_MAX_TOKENS,
) -> LfqaJudgement:
    """Score one answer on the four criteria; never raises for backend failures or unreadable replies.

    Args:
        question: the question.
        answer: the answer to score (Assistant 1).
        backend: the judge LLM.
        context: the source passage (already cut to the context budget).
        reference: the reference answer shown as Assistant 2 (None or "" for the single-answer prompt).
        cache: reply cache.
        repair: ask once more for JSON when a criterion is missing.
        max_new_tokens: budget of the judge reply.

    Returns:
        The judgement (None scores where nothing valid could be read; all None after a failure).
    """
    messages = judge_messages(question, answer, context=context, reference=reference)
    try:
        reply, from_cache = cached_chat(backend, messages, cache, max_new_tokens=max_new_tokens)
    except LLMError as error:
        logger.warning("LFQA judge failed for question %r: %s", question[:80], error)
        return LfqaJudgement({name: None for name in CRITERIA}, None, "error")
    scores = parse_judge_scores(reply)
    source: Source = "cache" if from_cache else "judge"
    repaired = False
    if repair and any(value is None for value in scores.values()):
        follow_up = messages + [
            ChatMessage("assistant", reply),
            ChatMessage("user", render("lfqa_judge_repair")),
        ]
        try:
            second, _ = cached_chat(backend, follow_up, cache, max_new_tokens=REPAIR_MAX_TOKENS)
        except LLMError as error:
            logger.warning("LFQA judge repair request failed for question %r: %s", question[:80], error)
        else:
            repaired = True
            # The repair turn names no assistant: its scores are read as Assistant 1's.
            for name, value in parse_judge_scores(second).items():
                if scores[name] is None:
                    scores[name] = value
    missing = [name for name, value in scores.items() if value is None]
    if missing:
        logger.warning(
            "LFQA judge reply for question %r has no valid score for %s: %r",
            question[:80],
            ", ".join(missing),
            reply[-200:],
        )
    return LfqaJudgement(scores, reply, source, repaired)


def judge_item_scores(
    items: Sequence[QAItem],
    predictions: Sequence[Prediction],
    backend: LLMBackend,
    cache: Optional[JudgeCache] = None,
    progress: Optional[ProgressCallback] = None,
) -> list[dict[str, Optional[float]]]:
    """Score each prediction on coherence, relevance, factual consistency and accuracy (0-3).

    The context is the item's document (cut to the paper's 2k-token budget around the question and the
    reference answer), the reference answer is shown as a second assistant when the item has one; see
    the module docstring. Failures and unreadable replies give None (logged), never an exception.

    Args:
        items: the questions with their documents and reference answers.
        predictions: one prediction per item, matched by id (any order).
        backend: the judge LLM.
        cache: reply cache (replies are keyed by backend name and prompt).
        progress: called with (items done, items total).

    Returns:
        One dict per item, in item order, with keys ``coherence``, ``relevance``,
        ``factual_consistency``, ``accuracy`` (float 0-3 or None).

    Raises:
        ValueError: an item has no prediction, or a prediction id repeats.
    """
    aligned = align(predictions, items)
    results: list[dict[str, Optional[float]]] = []
    incomplete = 0
    contexts: dict[tuple[str, str], str] = {}
    for done, (item, prediction) in enumerate(zip(items, aligned, strict=True), start=1):
        query = f"{item.question} {item.answer}".strip()
        key = (item.document_name or f"item:{item.id}", query)
        context = contexts.get(key)
        if context is None:
            context = select_context(item.document or "", query, MAX_CONTEXT_CHARS) if item.document else ""
            contexts[key] = context
        judgement = judge_answer(
            item.question, prediction.answer, backend, context=context, reference=item.answer, cache=cache
        )
        if not judgement.complete:
            incomplete += 1
            logger.warning("LFQA judge: item '%s' has undefined criteria (%s)", item.id, judgement.source)
        results.append({name: judgement.scores.get(name) for name in CRITERIA})
        if progress is not None:
            progress(done, len(items))
    if incomplete:
        logger.warning("LFQA judge: %d of %d items have at least one undefined score", incomplete, len(items))
    return results
