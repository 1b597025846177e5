"""The multiple-choice part of a benchmark run: choose an option for each item of a SciQ-style split.

:func:`evaluation.services.execution.execute_run` calls :func:`run_mcq` for releases of kind ``mcq``; it
stores accuracy on the run (``metrics``: ``n``, ``accuracy``, ``unanswered`` and, with a local model,
``accuracy_norm``) and the per-item choices in the run's JSON file. A local model (the default
SmolLM2, or ``--model DIR``) scores each option by log-likelihood; ``--model openai`` asks the
``LLM_API_BASE`` endpoint for a letter (see :mod:`evaluation.mcq`). ``runs`` imports this module
only inside ``execute_run``, so importing ``runs`` here makes no cycle at import time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from evaluation.llm import HFCausalLMBackend, OpenAIChatBackend
from evaluation.mcq import (
    LETTERS,
    MCQChoice,
    MCQItem,
    accuracy,
    choose_by_chat,
    choose_by_loglikelihood,
    read_mcq_split,
)
from evaluation.models import BenchmarkRun
from evaluation.services.execution import ProgressRecorder, run_header
from evaluation.services.items import BenchmarkInputError
from evaluation.services.runs import empty_split_message
from exports.release_store import release_root

WriteResults = Callable[[BenchmarkRun, dict[str, Any]], str]


def _document(run: BenchmarkRun, items: Sequence[MCQItem], choices: Sequence[MCQChoice]) -> dict[str, Any]:
    return {
        **run_header(run),
        "items": [
            {
                "id": item.id,
                "question": item.question,
                "options": list(item.options),
                "answer_key": LETTERS[item.answer_index],
                "chosen": None if choice.index is None else LETTERS[choice.index],
                "chosen_norm": None if choice.norm_index is None else LETTERS[choice.norm_index],
                "correct": choice.index == item.answer_index,
                "loglikelihoods": list(choice.scores),
                "reply": choice.reply,
            }
            for item, choice in zip(items, choices, strict=True)
        ],
    }


def run_mcq(
    run: BenchmarkRun, recorder: ProgressRecorder, timings: dict[str, float], *, write_results: WriteResults
) -> None:
    """Answer a multiple-choice split and store accuracy, ``n_items`` and the results file on ``run``.

    Raises:
        BenchmarkInputError: the split holds no item (a run is never scored on n=0).
        evaluation.mcq.MCQInputError, evaluation.llm.LLMError: a bad file or a failing model/endpoint.
    """
    clock = time.perf_counter()
    items = read_mcq_split(release_root(run.release), run.split)
    limit = run.params.get("limit")
    items = items[:limit] if limit else items
    if not items:
        raise BenchmarkInputError(empty_split_message(run.release, run.split))
    timings["load"] = time.perf_counter() - clock
    clock = time.perf_counter()
    progress = recorder.stage("choose")
    if run.params.get("method") == "letter":
        choices = choose_by_chat(items, OpenAIChatBackend.from_env(), progress)
    else:
        backend = HFCausalLMBackend(model_dir=run.params.get("model") or None)
        choices = choose_by_loglikelihood(items, backend.loglikelihoods, progress)
    timings["choose"] = time.perf_counter() - clock
    run.metrics = accuracy(items, choices)
    run.stratified = {}
    run.n_items = len(items)
    run.results_path = write_results(run, _document(run, items, choices))
