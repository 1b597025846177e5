"""The SciQ artifact check on real SciQ items: how often does SmolLM2 answer from the options alone?

Each item of the chosen split (question, correct answer, the three released distractors; no passage) goes
through :func:`evaluation.options_only.check_item` with the packaged SmolLM2-135M on CPU, as the stage-2
job does. Prints the model's load time, the share of items it answers (the correct answer wins by total
and by per-character log-likelihood: the items a researcher would be asked to review), the accuracy by
each measure alone (chance is 0.25), latency per item p50/p95, and a final JSON line.

    .venv/bin/python benchmarks/options_only.py [--split test] [--limit 200]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.importers.mcq import read_sciq  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.llm import HFCausalLMBackend  # noqa: E402
from evaluation.options_only import check_item  # noqa: E402


def nearest_rank(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("--limit", type=int, default=200, help="First N items of the split (0: all).")
    args = parser.parse_args()
    root = dataset_dir("sciq")
    if root is None:
        raise SystemExit("SciQ not found (set CROWDQA_SHARED_DATA)")
    items = [r for r in read_sciq(root, splits=(args.split,)) if len(r.distractors) == 3]
    if args.limit:
        items = items[: args.limit]
    backend = HFCausalLMBackend()
    start = time.perf_counter()
    backend.load()
    load_s = time.perf_counter() - start
    results = [check_item(r.question, r.answer, r.distractors, backend.loglikelihoods) for r in items]
    n = len(results)
    latencies = sorted(r.latency_s * 1000 for r in results)
    summary = {
        "split": args.split,
        "items": n,
        "model": backend.name,
        "load_s": round(load_s, 1),
        "answered": sum(r.answered for r in results),
        "answered_rate": round(sum(r.answered for r in results) / n, 4),
        "accuracy_total": round(sum(r.chosen == 0 for r in results) / n, 4),
        "accuracy_per_char": round(sum(r.chosen_per_char == 0 for r in results) / n, 4),
        "latency_p50_ms": round(nearest_rank(latencies, 50), 1),
        "latency_p95_ms": round(nearest_rank(latencies, 95), 1),
    }
    print(f"SciQ {args.split}: {n} items, {summary['model']} loaded in {summary['load_s']} s")
    answered = f"{summary['answered']} ({summary['answered_rate']:.3f})"
    print(f"answered from the options alone (flagged for review): {answered}")
    total, per_char = summary["accuracy_total"], summary["accuracy_per_char"]
    print(f"accuracy by total log-likelihood {total:.3f}, per character {per_char:.3f} (chance 0.25)")
    print(f"latency per item: p50 {summary['latency_p50_ms']} ms, p95 {summary['latency_p95_ms']} ms")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
