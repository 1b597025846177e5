"""SyllabusQA baselines: search, zero-shot, RAG, chain-of-thought and SFT (a LoRA adapter) answers.

``run_system(system_name, items, options, progress)`` is the one entry point the gpu-queue task
and ``run_benchmark`` command call. Systems:

- ``search``: the top-1 BM25 chunk (200 characters, 50 overlap) verbatim (paper appendix E).
- ``zero-shot``: prompt J.1 without snippets.
- ``rag``: prompt J.1 with the top-5 BM25 chunks (authors' config: 1000 characters, 200 overlap).
- ``cot``: prompt J.2 (question type, reasoning steps, answer) with the RAG snippets.
- ``sft``: prompt J.1 with RAG snippets, answered by a model with a LoRA adapter (``options.adapter_dir``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

from evaluation.chunking import RAG_CHUNK_OVERLAP, RAG_CHUNK_SIZE, SEARCH_CHUNK_OVERLAP, SEARCH_CHUNK_SIZE
from evaluation.llm import ChatMessage, HFCausalLMBackend, LLMBackend
from evaluation.prompting import syllabus_messages
from evaluation.retrieval import ChunkIndex
from evaluation.schema import QUESTION_TYPES, SYSTEMS, Prediction, ProgressCallback, QAItem

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SystemOptions:
    """Knobs of :func:`run_system`; the defaults reproduce the paper.

    Attributes:
        k: chunks retrieved for RAG prompts (5).
        chunk_size / chunk_overlap: RAG chunking (1000 / 200, the authors' config).
        search_chunk_size / search_chunk_overlap: search-baseline chunking (200 / 50, appendix E).
        backend: the LLM for generating systems; None builds the default local SmolLM2.
        adapter_dir: LoRA adapter for ``sft`` (required for it unless ``backend`` already has one).
        max_new_tokens: generation budget.
        temperature: 0 is greedy (reproducible); the paper sampled (top-p 0.95, top-k 50).
    """

    k: int = 5
    chunk_size: int = RAG_CHUNK_SIZE
    chunk_overlap: int = RAG_CHUNK_OVERLAP
    search_chunk_size: int = SEARCH_CHUNK_SIZE
    search_chunk_overlap: int = SEARCH_CHUNK_OVERLAP
    backend: Optional[LLMBackend] = None
    adapter_dir: Optional[str] = None
    max_new_tokens: int = 256
    temperature: float = 0.0


class SnippetRetriever:
    """The top-k BM25 chunks of an item's syllabus, with one index per syllabus built once.

    Shared by :func:`run_system` and the SFT training data (``evaluation.sft_data``) so that fine-tuning
    sees exactly the snippets generation will see.
    """

    def __init__(self, chunk_size: int, chunk_overlap: int, k: int) -> None:
        """Set the chunking and how many chunks to return per question.

        Args:
            chunk_size: chunk length in characters.
            chunk_overlap: characters shared by adjacent chunks.
            k: chunks per question, best first.
        """
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.k = k
        self._indexes: dict[str, ChunkIndex] = {}

    def __call__(self, item: QAItem) -> tuple[str, ...]:
        """Return the texts of the ``k`` best chunks of ``item.document`` for ``item.question``.

        Raises:
            ValueError: the document yields no chunk (empty text).
        """
        key = item.document_name or f"item:{item.id}"  # one index per syllabus, built once
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = ChunkIndex(item.document or "", self.chunk_size, self.chunk_overlap)
        return tuple(chunk.text for chunk in index.search(item.question, self.k))


def system_messages(system_name: str, question: str, snippets: Sequence[str]) -> list[ChatMessage]:
    """Return the prompt a generating system sends for one question (J.2 for ``cot``, else J.1).

    Args:
        system_name: one of :data:`SYSTEMS` other than ``search``.
        question: the student's question.
        snippets: retrieved chunks, best first (empty for ``zero-shot``).

    Returns:
        The system and user messages.
    """
    return syllabus_messages(question, snippets, cot=system_name == "cot")


def run_system(
    system_name: str,
    items: Sequence[QAItem],
    options: Optional[SystemOptions] = None,
    progress: Optional[ProgressCallback] = None,
) -> list[Prediction]:
    """Answer every item with one baseline system.

    Args:
        system_name: one of :data:`SYSTEMS`.
        items: questions; search/RAG/CoT/SFT need ``item.document`` (the syllabus text).
        options: see :class:`SystemOptions`.
        progress: called with (items done, items total) after each item.

    Returns:
        One :class:`Prediction` per item, in order.

    Raises:
        ValueError: an unknown system, or an item without the document a system needs (names the id).
    """
    if system_name not in SYSTEMS:
        raise ValueError(f"unknown system '{system_name}'; choose from {', '.join(SYSTEMS)}")
    options = options or SystemOptions()
    needs_document = system_name != "zero-shot"
    for item in items:
        if needs_document and not (item.document or "").strip():
            raise ValueError(f"item '{item.id}': system '{system_name}' needs the syllabus text (document)")
    backend: Optional[LLMBackend] = None
    if system_name != "search":
        backend = options.backend
        if backend is None:
            if system_name == "sft" and not options.adapter_dir:
                raise ValueError("system 'sft' needs options.adapter_dir (a LoRA adapter) or options.backend")
            backend = HFCausalLMBackend(adapter_dir=options.adapter_dir if system_name == "sft" else None)
    if system_name == "search":
        size, overlap, k = options.search_chunk_size, options.search_chunk_overlap, 1
    else:
        size, overlap, k = options.chunk_size, options.chunk_overlap, options.k
    retriever = SnippetRetriever(size, overlap, k)
    predictions: list[Prediction] = []
    for done, item in enumerate(items, start=1):
        snippets: tuple[str, ...] = retriever(item) if needs_document else ()
        if system_name == "search":
            predictions.append(Prediction(id=item.id, answer=snippets[0], context=snippets, raw=snippets[0]))
        else:
            assert backend is not None
            cot = system_name == "cot"
            raw = backend.chat(
                system_messages(system_name, item.question, snippets),
                max_new_tokens=options.max_new_tokens,
                temperature=options.temperature,
            )
            if cot:
                parsed = parse_cot_output(raw)
                predictions.append(
                    Prediction(
                        id=item.id,
                        answer=parsed.answer,
                        predicted_type=parsed.question_type,
                        context=snippets,
                        raw=raw,
                        meta={"reasoning_steps": list(parsed.reasoning_steps), "backend": backend.name},
                    )
                )
            else:
                predictions.append(
                    Prediction(
                        id=item.id,
                        answer=raw.strip(),
                        context=snippets,
                        raw=raw,
                        meta={"backend": backend.name},
                    )
                )
        if progress is not None:
            progress(done, len(items))
    return predictions


@dataclass(frozen=True)
class CotOutput:
    """A chain-of-thought reply split into its parts."""

    question_type: Optional[str]
    reasoning_steps: tuple[str, ...]
    answer: str


_TYPE_BY_NUMBER = {str(i): name for i, name in enumerate(QUESTION_TYPES, start=1)}
_ANSWER_MARK = re.compile(r"(?:###\s*)?(?:the\s+)?answer(?:\s+is)?\s*:\s*", re.IGNORECASE)
_STEPS_MARK = re.compile(r"(?:###\s*)?(?:the\s+)?reasoning steps?(?:\s+are)?\s*:\s*", re.IGNORECASE)


def parse_cot_output(text: str) -> CotOutput:
    """Split a J.2 reply into question type, reasoning steps and answer.

    The reply is expected to start with the type (by name or by its 1-7 number), optionally list steps
    (after "Reasoning steps:" or as numbered lines), then give the answer (after "Answer:" / "The answer
    is:"). Without an answer marker, the text after the type line (minus steps) is the answer.

    Args:
        text: the model output.

    Returns:
        The parts; ``question_type`` is None when no known type is found.
    """
    body = text.strip()
    question_type: Optional[str] = None
    first_line, _, rest = body.partition("\n")
    lowered = first_line.lower().replace("-", " ")
    for name in sorted(QUESTION_TYPES, key=len, reverse=True):
        if name in lowered:
            question_type = name
            break
    if question_type is None:
        number = re.match(r"\s*(?:\d\)\s*)?([1-7])\b", first_line)
        if number:
            question_type = _TYPE_BY_NUMBER[number.group(1)]
    remainder = rest if question_type is not None else body
    answer_match = _ANSWER_MARK.search(remainder)
    if answer_match:
        before, answer = remainder[: answer_match.start()], remainder[answer_match.end() :]
    else:
        before, answer = "", remainder
    steps_text = _STEPS_MARK.sub("", before)
    steps = tuple(
        re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip()
        for line in steps_text.splitlines()
        if line.strip()
    )
    if not answer_match and question_type is None:
        answer = body
    return CotOutput(question_type=question_type, reasoning_steps=steps, answer=answer.strip())
