"""Never-empty suggestions: every SciQ test question gets six labelled suggestions, and how fast (warm).

Runs the stage-2 HIT's suggester (``distractors.ranker.load_suggester``: the trained ranker in
``--model-dir``, or the WordNet fallback chain when none is given or trained) over all 1,000 SciQ test
questions after one warm-up call, and prints the number of empty and short lists, which sources filled
them, and p50/p95/max latency per question.

    .venv/bin/python benchmarks/distractor_never_empty.py [--model-dir DIR] [--questions 1000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from config.shared_data import shared_data_dir  # noqa: E402
from distractors.mcq_data import McqQuestion, load_sciq  # noqa: E402
from distractors.ranker import load_suggester  # noqa: E402


def measure(suggester: Any, questions: Sequence[McqQuestion], top: int = 6) -> dict[str, Any]:
    """Suggest for every question after one warm-up call; return empty/short counts, sources and latency.

    Args:
        suggester: what the stage-2 HIT uses (``load_suggester``).
        questions: the questions, each suggested for once and timed.
        top: suggestions asked for per question.
    """
    suggester.suggest(questions[0].question, questions[0].answer, top=top)  # warm-up (lazy loads)
    latencies, cpu, sources, short = [], [], Counter(), []
    for q in questions:
        t, c = time.perf_counter(), time.process_time()
        suggestions = suggester.suggest(q.question, q.answer, top=top)
        latencies.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
        sources.update(s.source for s in suggestions)
        if len(suggestions) < top:
            short.append((q.answer, len(suggestions)))
    latencies.sort()
    cpu.sort()
    return {
        "questions": len(questions),
        "empty": sum(1 for _, n in short if n == 0),
        "short": short,
        "sources": dict(sources.most_common()),
        "p50_s": statistics.median(latencies),
        "p95_s": latencies[int(0.95 * (len(latencies) - 1))],
        "max_s": latencies[-1],
        # CPU time of this process per question: what the wall time would be on an otherwise idle core.
        "cpu_p50_s": statistics.median(cpu),
        "cpu_p95_s": cpu[int(0.95 * (len(cpu) - 1))],
    }


def report(suggester: Any, result: dict[str, Any], top: int) -> None:
    """Print what ``measure`` found."""
    short = result["short"]
    print(f"suggester: {suggester.model_version}; {result['questions']} SciQ test questions, top {top}")
    print(f"empty lists: {result['empty']}; short lists: {len(short)} {short[:10]}")
    print(f"suggestions by source: {result['sources']}")
    print(
        f"latency per question: p50 {result['p50_s']:.3f} s, p95 {result['p95_s']:.3f} s, "
        f"max {result['max_s']:.3f} s; CPU time p50 {result['cpu_p50_s']:.3f} s, "
        f"p95 {result['cpu_p95_s']:.3f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--sciq", type=Path, default=shared_data_dir() / "sciq")
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--top", type=int, default=6)
    args = parser.parse_args()
    suggester = load_suggester(args.model_dir)
    questions = load_sciq(args.sciq, "test")[: args.questions]
    report(suggester, measure(suggester, questions, args.top), args.top)


if __name__ == "__main__":
    main()
