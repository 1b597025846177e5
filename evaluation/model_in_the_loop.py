"""Model in the loop: a baseline answers a worker's question from the syllabus; a judge says if it matched.

Django-free, so the replay command (``manage.py model_in_the_loop``), the benchmark
(``benchmarks/model_in_the_loop.py``) and, later, the HIT card's asynchronous check share one path:
:func:`check_pair` takes the syllabus text, the question, the worker's answer and the question type and
returns a frozen :class:`LoopResult` (system, model answer, judge, verdict, score, latency).

System ``search`` is the search baseline (top-1 BM25 chunk, 200 characters / 50 overlap, as in
:mod:`evaluation.baselines`). A search engine always returns a chunk, so "no answer" is expressed by its
retrieval score: when the top-1 BM25 score is below ``no_answer_below`` (:data:`NO_ANSWER_BM25`, 4.0) the
model abstains and its answer is :data:`evaluation.schema.INSUFFICIENT_ANSWER`. The 4.0 was read off the
SyllabusQA *val* split (not test): about 20% of no-answer questions and 10-15% of answerable ones score
below it, so it is a weak but honest signal of "the syllabus does not say".

System ``rag`` is the RAG baseline of :mod:`evaluation.baselines` (prompt J.1 with the top-5 BM25 chunks,
1000 characters / 200 overlap, greedy, at most :data:`RAG_MAX_NEW_TOKENS` new tokens). Its LLM is
:func:`rag_backend`: the OpenAI-compatible endpoint of ``LLM_API_BASE`` / ``LLM_MODEL`` / ``LLM_API_KEY``
when ``LLM_API_BASE`` is set (timeout :data:`RAG_TIMEOUT_S`, no retry: a card must not wait long), else
the packaged SmolLM2-135M-Instruct on the worker's CPU or GPU, loaded once per worker process. It
abstains when its answer says there is no / insufficient information
(:func:`evaluation.factqa.is_insufficient`); an abstention is recorded as :data:`INSUFFICIENT_ANSWER`.

Judges compare the model's answer with the worker's:

- ``lexical``: EVOUNA's Lexical Match (:mod:`evaluation.lexical_match`): matched when the worker's answer,
  normalized, is a substring of the model's; score 1.0 or 0.0.
- ``rouge_l``: ROUGE-L F1 (:func:`evaluation.metrics.rouge_l_f1`) of the model's answer against the
  worker's; matched at ``threshold`` (:data:`ROUGE_L_THRESHOLD`, 0.3) or above.
- ``fact_qa``: SyllabusQA's Fact-QA F1 (:mod:`evaluation.factqa`: an LLM judge counts the atomic claims
  of each answer the other supports, both ways) of the model's answer against the worker's; matched at
  ``threshold`` or above. The judge LLM is :func:`rag_backend` (the configured endpoint, else the local
  SmolLM2); a reply without a valid score is a failure (no verdict), not a guess.

The adversarial ``no answer`` type is judged the other way: its aim is a question the syllabus cannot
answer, so the model is "matched" when it abstains and "fooled" when it answers anyway (score 1.0 for an
abstention, else 0.0), whatever the judge.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional

from annotation import question_types as qt
from evaluation.chunking import RAG_CHUNK_OVERLAP, RAG_CHUNK_SIZE, SEARCH_CHUNK_OVERLAP, SEARCH_CHUNK_SIZE
from evaluation.lexical_match import lexical_match
from evaluation.metrics import rouge_l_f1
from evaluation.retrieval import ChunkIndex
from evaluation.schema import INSUFFICIENT_ANSWER

LOOP_SYSTEMS: tuple[str, ...] = ("search", "rag")
#: Chunks in a RAG prompt (the paper's k).
RAG_K = 5
#: Generation budget of the RAG system: syllabus answers are a sentence or two, and a card must not wait.
RAG_MAX_NEW_TOKENS = 128
#: Seconds an endpoint may take for one answer before the card gets "no model answer".
RAG_TIMEOUT_S = 20.0
LOOP_JUDGES: tuple[str, ...] = ("lexical", "rouge_l", "fact_qa")
FOOLED = "fooled"
MATCHED = "matched"
#: Top-1 BM25 score under which the search baseline says there is no answer (module doc).
NO_ANSWER_BM25 = 4.0
#: ROUGE-L F1 at or above which the ``rouge_l`` judge calls the answers a match.
ROUGE_L_THRESHOLD = 0.3


@dataclass(frozen=True)
class ModelAnswer:
    """What a system answered: the text, whether it abstained, and its retrieval score."""

    text: str
    abstained: bool
    retrieval_score: float


@dataclass(frozen=True)
class LoopResult:
    """One question checked against the model.

    Attributes:
        system: the answering system (``search`` or ``rag``).
        model_answer: the model's answer (:data:`INSUFFICIENT_ANSWER` when it abstained).
        judge: ``lexical`` or ``rouge_l``.
        verdict: ``fooled`` (the model got it wrong) or ``matched``.
        score: the judge's score in [0, 1] (1.0/0.0 for Lexical Match and for no-answer questions).
        latency_s: seconds the system took to answer (index build included when the syllabus is new).
        abstained: the model said there is no answer.
    """

    system: str
    model_answer: str
    judge: str
    verdict: str
    score: float
    latency_s: float
    abstained: bool


@lru_cache(maxsize=64)
def _index(syllabus: str, size: int = SEARCH_CHUNK_SIZE, overlap: int = SEARCH_CHUNK_OVERLAP) -> ChunkIndex:
    """One BM25 index per syllabus text and chunking, kept warm for the next question on the same syllabus."""
    return ChunkIndex(syllabus, size, overlap)


@lru_cache(maxsize=1)
def rag_backend() -> Any:
    """The RAG system's LLM (module doc): the configured endpoint, else the local SmolLM2 (lazy load).

    Raises:
        evaluation.llm.LLMConfigurationError: no endpoint and the packaged model is missing.
    """
    import os

    from evaluation.llm import HFCausalLMBackend, OpenAIChatBackend

    if os.environ.get("LLM_API_BASE", "").strip():
        return OpenAIChatBackend.from_env(timeout=RAG_TIMEOUT_S, max_retries=0)
    return HFCausalLMBackend()


def rag_answer(syllabus: str, question: str, backend: Optional[Any] = None) -> ModelAnswer:
    """The RAG baseline's answer: J.1 with the top-5 chunks; an abstention when it says there is no answer.

    Raises:
        ValueError: the syllabus is empty. Whatever the backend raises (down, timeout) propagates.
    """
    from evaluation.factqa import is_insufficient
    from evaluation.prompting import syllabus_messages

    chunks = _index(syllabus, RAG_CHUNK_SIZE, RAG_CHUNK_OVERLAP).search(question, RAG_K)
    backend = backend if backend is not None else rag_backend()
    messages = syllabus_messages(question, [c.text for c in chunks])
    reply = backend.chat(messages, max_new_tokens=RAG_MAX_NEW_TOKENS, temperature=0.0).strip()
    top = chunks[0].score if chunks else 0.0
    if not reply or is_insufficient(reply):
        return ModelAnswer(text=INSUFFICIENT_ANSWER, abstained=True, retrieval_score=top)
    return ModelAnswer(text=reply, abstained=False, retrieval_score=top)


def search_answer(syllabus: str, question: str, no_answer_below: float = NO_ANSWER_BM25) -> ModelAnswer:
    """The search baseline's answer: the top-1 chunk, or an abstention under ``no_answer_below``.

    Raises:
        ValueError: the syllabus is empty (nothing to search).
    """
    top = _index(syllabus).search(question, 1)[0]
    if top.score < no_answer_below:
        return ModelAnswer(text=INSUFFICIENT_ANSWER, abstained=True, retrieval_score=top.score)
    return ModelAnswer(text=top.text, abstained=False, retrieval_score=top.score)


def judge_answer(
    answer: ModelAnswer,
    worker_answer: str,
    question_type: str,
    judge: str = "lexical",
    threshold: float = ROUGE_L_THRESHOLD,
    question: str = "",
    backend: Optional[Any] = None,
) -> tuple[str, float]:
    """Return (verdict, score) for a model answer against the worker's (module doc for the rules).

    ``question`` and ``backend`` (default :func:`rag_backend`) serve the ``fact_qa`` judge only.

    Raises:
        ValueError: an unknown judge, or a Fact-QA judge reply without a valid score. The Fact-QA
            judge's backend failures propagate.
    """
    if judge not in LOOP_JUDGES:
        raise ValueError(f"unknown judge '{judge}'; choose from {', '.join(LOOP_JUDGES)}")
    if question_type == qt.NO_ANSWER:
        return (MATCHED, 1.0) if answer.abstained else (FOOLED, 0.0)
    if answer.abstained:
        return FOOLED, 0.0
    if judge == "lexical":
        matched = bool(worker_answer.strip()) and lexical_match(answer.text, [worker_answer])
        return (MATCHED if matched else FOOLED), float(matched)
    if judge == "fact_qa":
        value = fact_qa_f1(question, answer.text, worker_answer, backend)
    else:
        value = rouge_l_f1([answer.text], [worker_answer])[0]
    return (MATCHED if value >= threshold else FOOLED), value


def fact_qa_f1(question: str, model_answer: str, worker_answer: str, backend: Optional[Any] = None) -> float:
    """Fact-QA F1 of the model's answer against the worker's, judged by ``backend`` (default
    :func:`rag_backend`).

    Raises:
        ValueError: the judge gave no valid score in either direction. Backend failures propagate.
    """
    from evaluation.factqa import f1_from, judge_pair

    backend = backend if backend is not None else rag_backend()
    precision = judge_pair(question, model_answer, worker_answer, backend).score
    recall = judge_pair(question, worker_answer, model_answer, backend).score
    value = f1_from(precision, recall)
    if value is None:
        raise ValueError("the Fact-QA judge gave no valid score")
    return value


def check_pair(
    syllabus: str,
    question: str,
    worker_answer: str,
    question_type: str,
    system: str = "search",
    judge: str = "lexical",
    threshold: float = ROUGE_L_THRESHOLD,
    no_answer_below: float = NO_ANSWER_BM25,
    backend: Optional[Any] = None,
) -> LoopResult:
    """Ask ``system`` the worker's question about ``syllabus`` and judge its answer against the worker's.

    ``backend`` is the LLM of a generating system (default :func:`rag_backend`); ``search`` ignores it.

    Raises:
        ValueError: an unknown system or judge, or an empty syllabus. A generating system's backend
            failures (endpoint down, timeout) propagate: the caller fails open.
    """
    if system not in LOOP_SYSTEMS:
        raise ValueError(f"unknown system '{system}'; choose from {', '.join(LOOP_SYSTEMS)}")
    if judge not in LOOP_JUDGES:
        raise ValueError(f"unknown judge '{judge}'; choose from {', '.join(LOOP_JUDGES)}")
    start = time.perf_counter()
    if system == "rag":
        answer = rag_answer(syllabus, question, backend)
    else:
        answer = search_answer(syllabus, question, no_answer_below)
    latency = time.perf_counter() - start
    verdict, score = judge_answer(answer, worker_answer, question_type, judge, threshold, question, backend)
    return LoopResult(
        system=system,
        model_answer=answer.text,
        judge=judge,
        verdict=verdict,
        score=score,
        latency_s=latency,
        abstained=answer.abstained,
    )


def system_version(
    system: str = "search",
    no_answer_below: float = NO_ANSWER_BM25,
    backend: Optional[Any] = None,
    judge: str = "lexical",
) -> str:
    """What answered, precisely enough to compare rates across batches: method, chunking and abstention
    (and, for ``rag``, the LLM: ``backend``'s name, default :func:`rag_backend`'s); with the ``fact_qa``
    judge, also the judge's LLM.

    Raises:
        ValueError: an unknown system.
    """
    version = _system_version(system, no_answer_below, backend)
    if judge == "fact_qa":
        version += f"; Fact-QA judge: {(backend if backend is not None else rag_backend()).name}"
    return version


def _system_version(system: str, no_answer_below: float, backend: Optional[Any]) -> str:
    if system not in LOOP_SYSTEMS:
        raise ValueError(f"unknown system '{system}'; choose from {', '.join(LOOP_SYSTEMS)}")
    if system == "rag":
        name = (backend if backend is not None else rag_backend()).name
        return (
            f"rag: {name}, prompt J.1 with top-{RAG_K} BM25 chunks "
            f"{RAG_CHUNK_SIZE}/{RAG_CHUNK_OVERLAP} chars, greedy, at most {RAG_MAX_NEW_TOKENS} new tokens"
        )
    return (
        f"search: BM25 (rank_bm25 Okapi) top-1 chunk {SEARCH_CHUNK_SIZE}/{SEARCH_CHUNK_OVERLAP} chars, "
        f"no answer below {no_answer_below:g}"
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``, or None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _group(results: Sequence[LoopResult]) -> dict[str, Any]:
    fooled = sum(r.verdict == FOOLED for r in results)
    latencies = [r.latency_s for r in results]
    return {
        "n": len(results),
        "fooled": fooled,
        "matched": len(results) - fooled,
        "fooled_rate": fooled / len(results) if results else None,
        "latency_p50_s": percentile(latencies, 50),
        "latency_p95_s": percentile(latencies, 95),
    }


def summarize(typed_results: Iterable[tuple[str, LoopResult]]) -> dict[str, Any]:
    """Counts, fooled rates and latency p50/p95 overall and per question type (``by_type``).

    Args:
        typed_results: (question type, result) pairs.
    """
    by_type: dict[str, list[LoopResult]] = {}
    everything: list[LoopResult] = []
    for question_type, result in typed_results:
        by_type.setdefault(question_type, []).append(result)
        everything.append(result)
    order = {name: i for i, name in enumerate(qt.SYLLABUS_TYPES)}
    return {
        **_group(everything),
        "by_type": {name: _group(by_type[name]) for name in sorted(by_type, key=lambda n: order.get(n, 99))},
    }


def summary_lines(summary: dict[str, Any]) -> list[str]:
    """The summary as an aligned table: one line per question type and one overall."""

    def line(label: str, group: dict[str, Any]) -> str:
        rate = group["fooled_rate"]
        p50, p95 = group["latency_p50_s"], group["latency_p95_s"]
        return (
            f"{label:<18}{group['n']:>6}{group['fooled']:>8}"
            f"{(f'{rate:.3f}' if rate is not None else '-'):>13}"
            f"{(f'{p50 * 1000:.1f}' if p50 is not None else '-'):>9}"
            f"{(f'{p95 * 1000:.1f}' if p95 is not None else '-'):>9}"
        )

    header = f"{'type':<18}{'n':>6}{'fooled':>8}{'fooled rate':>13}{'p50 ms':>9}{'p95 ms':>9}"
    rows = [line(name, group) for name, group in summary["by_type"].items()]
    return [header, *rows, line("overall", summary)]
