"""One cached LLM call shared by the LFQA question generator, complexity rater and answer judge.

Every LFQA step is a chat call whose reply is worth keeping: a rerun of a long document or of a judged
release must not pay for the same call twice. Replies go through the Fact-QA judge's cache interface
(:class:`evaluation.factqa.JudgeCache`, keyed by :func:`evaluation.factqa.cache_key`), so one database
table or JSON file serves every judge of the platform.
"""

from __future__ import annotations

import logging
from typing import Optional

from evaluation.factqa import JudgeCache, cache_key
from evaluation.llm import ChatMessage, LLMBackend

logger = logging.getLogger(__name__)


def conversation_text(messages: list[ChatMessage]) -> str:
    """Serialize a conversation for its cache key (roles included: system and user text differ)."""
    return "\n\n".join(f"[{message.role}]\n{message.content}" for message in messages)


def call_key(backend: LLMBackend, messages: list[ChatMessage], temperature: float, sample: int) -> str:
    """Cache key of one call: :func:`cache_key` of the backend name and the conversation.

    Greedy calls (temperature 0) are keyed by the conversation alone; sampled calls also carry the
    temperature and the sample number, so several samples of one prompt (majority votes) stay distinct.
    """
    prompt = conversation_text(messages)
    if temperature > 0:
        prompt += f"\n\n[sampling]\ntemperature={temperature:g} sample={sample}"
    return cache_key(backend.name, prompt)


def cached_chat(
    backend: LLMBackend,
    messages: list[ChatMessage],
    cache: Optional[JudgeCache] = None,
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    sample: int = 0,
) -> tuple[str, bool]:
    """Return the backend's reply to ``messages``, from the cache when it is there.

    Args:
        backend: the LLM.
        messages: the conversation.
        cache: where replies are looked up and stored (None: always call).
        max_new_tokens: generation budget.
        temperature: 0 for greedy decoding.
        sample: the sample number when several samples of one prompt are drawn.

    Returns:
        (reply, from_cache).

    Raises:
        LLMError: the backend failed (nothing is cached then).
    """
    key = call_key(backend, messages, temperature, sample)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit, True
    reply = backend.chat(messages, max_new_tokens=max_new_tokens, temperature=temperature)
    if cache is not None:
        cache.set(key, reply)
    return reply, False
