"""Model in the loop on the SyllabusQA test split: per-type fooled rates and latency of the search baseline.

Each of the split's pairs (1,103 on test) is answered by the search baseline (top-1 BM25 chunk; it
abstains under a top-1 score of 4.0) and judged against the reference answer
(:func:`evaluation.model_in_the_loop.check_pair`), the path ``manage.py model_in_the_loop`` and the HIT
card share. Prints per-type counts, fooled rates and latency p50/p95 (one BM25 index per syllabus, kept
warm; the first question of a syllabus pays for building it), whether the paper's ordering holds
(implicit-answer types fool the model more often than explicit factual ones), and a final JSON line.

    .venv/bin/python benchmarks/model_in_the_loop.py [--split test] [--system search|rag]
        [--judge lexical|rouge_l|fact_qa] [--threshold 0.3] [--no-answer-below 4.0] [--limit N]

``--system rag`` answers with the RAG baseline's LLM (``LLM_API_BASE`` endpoint, else the local SmolLM2,
whose load is timed apart); ``--limit N`` takes N pairs evenly spaced over the split (a CPU LLM cannot
answer all 1,103 in a sitting).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_search_baseline import load_items  # noqa: E402

from annotation import question_types as qt  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.model_in_the_loop import (  # noqa: E402
    FOOLED,
    LOOP_JUDGES,
    LOOP_SYSTEMS,
    NO_ANSWER_BM25,
    ROUGE_L_THRESHOLD,
    check_pair,
    rag_backend,
    summarize,
    summary_lines,
)


def rate(results: list, types: tuple[str, ...]) -> float:
    """Fooled rate over the results of the given question types."""
    chosen = [r for t, r in results if t in types]
    return sum(r.verdict == FOOLED for r in chosen) / len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("--system", default="search", choices=LOOP_SYSTEMS)
    parser.add_argument("--judge", default="lexical", choices=LOOP_JUDGES)
    parser.add_argument("--limit", type=int, default=0, help="N pairs evenly spaced over the split (0: all)")
    parser.add_argument("--threshold", type=float, default=ROUGE_L_THRESHOLD)
    parser.add_argument("--no-answer-below", type=float, default=NO_ANSWER_BM25)
    args = parser.parse_args()
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("SyllabusQA not found (set CROWDQA_SHARED_DATA)")
    items = load_items(root, args.split)
    if args.limit > 0 and args.limit < len(items):
        step = len(items) / args.limit
        items = [items[int(i * step)] for i in range(args.limit)]
    load_s = 0.0
    if args.system == "rag" or args.judge == "fact_qa":
        loading = time.perf_counter()
        backend = rag_backend()
        if hasattr(backend, "load"):
            backend.load()
        load_s = time.perf_counter() - loading
        print(f"LLM {backend.name} ready in {load_s:.1f}s")
    start = time.perf_counter()
    results = [
        (
            item.question_type,
            check_pair(
                item.document or "",
                item.question,
                item.answer,
                item.question_type or "",
                system=args.system,
                judge=args.judge,
                threshold=args.threshold,
                no_answer_below=args.no_answer_below,
            ),
        )
        for item in items
    ]
    wall = time.perf_counter() - start
    summary = summarize(results)
    print(
        f"SyllabusQA {args.split}: {summary['n']} pairs, system {args.system}, judge {args.judge} "
        f"(ROUGE-L threshold {args.threshold}, abstains under BM25 {args.no_answer_below}), {wall:.1f}s"
    )
    for line in summary_lines(summary):
        print(line)
    explicit = (qt.YES_NO, qt.SINGLE_FACTUAL, qt.MULTI_FACTUAL)
    implicit = (qt.SINGLE_REASONING, qt.MULTI_REASONING, qt.SUMMARIZATION)
    explicit_rate, implicit_rate = rate(results, explicit), rate(results, implicit)
    holds = implicit_rate > explicit_rate
    print(
        f"explicit types fooled {explicit_rate:.3f}, implicit types fooled {implicit_rate:.3f}: "
        f"paper's ordering (implicit harder) {'holds' if holds else 'does not hold'}"
    )
    summary.update(
        split=args.split,
        system=args.system,
        judge=args.judge,
        llm_load_s=load_s,
        threshold=args.threshold,
        no_answer_below=args.no_answer_below,
        explicit_fooled_rate=explicit_rate,
        implicit_fooled_rate=implicit_rate,
        ordering_holds=holds,
        wall_s=wall,
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
