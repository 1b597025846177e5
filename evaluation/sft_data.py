"""Training examples for the SFT baseline: the generation prompt, then the answer, loss on the answer only.

SyllabusQA's SFT + RAG baseline (paper 4.1, appendix J.1) fine-tunes on the same prompt the zero-shot
RAG model sees: the system instruction, the top-k BM25 snippets of the syllabus and the question; the
target is the annotated answer. Here the prompt is built by the very code generation uses
(:class:`evaluation.baselines.SnippetRetriever` and :func:`evaluation.baselines.system_messages`) and
rendered by the backend's chat template, so training and inference cannot drift apart.

Length: when prompt + answer exceed ``max_length`` tokens, the lowest-ranked snippets are dropped first
(the prompt stays a well-formed J.1 prompt with fewer snippets); when even the snippet-free prompt is too
long, the answer is cut on the right; an item whose bare prompt does not fit raises ``ValueError``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.baselines import SnippetRetriever, system_messages
from evaluation.llm import ChatMessage
from evaluation.schema import QAItem

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100  # the label PyTorch's cross-entropy (and transformers' causal LM loss) skips

Renderer = Callable[[list[ChatMessage]], str]


@dataclass(frozen=True)
class SftExample:
    """One tokenized training example.

    Attributes:
        id: the item's id.
        input_ids: prompt tokens followed by answer tokens.
        labels: ``IGNORE_INDEX`` on every prompt token, the token id on every answer token.
        n_snippets: snippets kept in the prompt (fewer than ``k`` when the example had to be shortened).
        answer_truncated: the answer was cut to fit ``max_length``.
    """

    id: str
    input_ids: tuple[int, ...]
    labels: tuple[int, ...]
    n_snippets: int
    answer_truncated: bool


def check_items(items: Sequence[QAItem]) -> None:
    """Reject training sets that cannot produce an example, naming the offending ids.

    Raises:
        ValueError: no items, items without a syllabus text, or items with an empty answer.
    """
    if not items:
        raise ValueError("SFT needs at least one training item; the training set is empty")
    no_document = [item.id for item in items if not (item.document or "").strip()]
    if no_document:
        raise ValueError(
            f"{len(no_document)} training item(s) have no syllabus text (document), e.g. id "
            f"{', '.join(repr(i) for i in no_document[:5])}; SFT prompts need the retrieved snippets"
        )
    no_answer = [item.id for item in items if not item.answer.strip()]
    if no_answer:
        raise ValueError(
            f"{len(no_answer)} training item(s) have an empty answer (the SFT target), e.g. id "
            f"{', '.join(repr(i) for i in no_answer[:5])}"
        )


def join_prompt_and_target(
    prompt_ids: Sequence[int], target_ids: Sequence[int], max_length: int
) -> tuple[list[int], list[int]]:
    """Concatenate prompt and target tokens and label only the target, so the loss is on the answer alone.

    Args:
        prompt_ids: tokens of the rendered prompt (system, snippets, question, assistant header).
        target_ids: tokens of the answer and the end-of-turn marker.
        max_length: the longest sequence allowed; the target is cut on the right to fit.

    Returns:
        ``(input_ids, labels)`` of equal length, labels ``IGNORE_INDEX`` on the prompt.

    Raises:
        ValueError: the prompt leaves no room for a single target token, or the target is empty.
    """
    if not target_ids:
        raise ValueError("the target (answer) has no token")
    room = max_length - len(prompt_ids)
    if room < 1:
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens; max_length={max_length} leaves no room")
    kept = list(target_ids[:room])
    return list(prompt_ids) + kept, [IGNORE_INDEX] * len(prompt_ids) + kept


def target_text(tokenizer: Any, messages: list[ChatMessage], prompt: str, answer: str) -> str:
    """Return what the assistant turn adds after ``prompt``: the answer and the template's end of turn.

    With a chat template, the conversation is rendered with the answer as the assistant message and the
    prompt (rendered with ``add_generation_prompt``) is removed from its start, so the target ends exactly
    as the template closes a turn (``<|im_end|>`` for SmolLM2), which is where generation must stop.
    Without a template (or when the rendering does not start with the prompt) it is ``answer + eos``.
    """
    eos = getattr(tokenizer, "eos_token", None) or ""
    if getattr(tokenizer, "chat_template", None):
        turns = [{"role": m.role, "content": m.content} for m in messages]
        turns.append({"role": "assistant", "content": answer})
        full = tokenizer.apply_chat_template(turns, tokenize=False)
        if full.startswith(prompt) and len(full) > len(prompt):
            return full[len(prompt) :]
        logger.warning("chat template does not extend the generation prompt; target is answer + eos")
    return answer + eos


def build_examples(
    items: Sequence[QAItem],
    tokenizer: Any,
    render: Renderer,
    *,
    k: int,
    chunk_size: int,
    chunk_overlap: int,
    max_length: int,
) -> list[SftExample]:
    """Tokenize every item as (J.1 RAG prompt, answer), shortening over-long examples as the module says.

    Args:
        items: training items with document and answer (see :func:`check_items`).
        tokenizer: a Hugging Face tokenizer.
        render: turns messages into the prompt string generation uses (``HFCausalLMBackend.render``).
        k: snippets retrieved per question (5 in the paper).
        chunk_size: RAG chunk length in characters.
        chunk_overlap: RAG chunk overlap in characters.
        max_length: the longest example in tokens.

    Returns:
        One example per item, in order.

    Raises:
        ValueError: see :func:`check_items`; or an item whose prompt without snippets already fills
            ``max_length`` (names the id and the lengths).
    """
    check_items(items)
    retriever = SnippetRetriever(chunk_size, chunk_overlap, k)
    examples: list[SftExample] = []
    for item in items:
        snippets = retriever(item)
        example = None
        for n in range(len(snippets), -1, -1):  # drop the lowest-ranked snippets first
            messages = system_messages("sft", item.question, snippets[:n])
            prompt = render(messages)
            prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
            target_ids = tokenizer(
                target_text(tokenizer, messages, prompt, item.answer.strip()), add_special_tokens=False
            )["input_ids"]
            if len(prompt_ids) + len(target_ids) <= max_length or n == 0:
                if len(prompt_ids) >= max_length:
                    raise ValueError(
                        f"item '{item.id}': the prompt without snippets has {len(prompt_ids)} tokens, "
                        f"max_length={max_length} leaves no room for the answer; raise max_length"
                    )
                input_ids, labels = join_prompt_and_target(prompt_ids, target_ids, max_length)
                example = SftExample(
                    id=item.id,
                    input_ids=tuple(input_ids),
                    labels=tuple(labels),
                    n_snippets=n,
                    answer_truncated=len(input_ids) < len(prompt_ids) + len(target_ids),
                )
                break
        assert example is not None
        examples.append(example)
    return examples
