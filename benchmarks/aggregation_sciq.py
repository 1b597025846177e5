"""SciQ stage 2 with k validators per question, simulated: accuracy of each aggregation method against the
truth, the workers it would block, and the aggregation time.

Usage: .venv/bin/python benchmarks/aggregation_sciq.py [--questions 2000] [--k 3] [--seeds 3]
       [--bad-share 0.3] [--block-below 0.6] [--speed-labels 10000]

Real SciQ questions (../shared/data/sciq, or CROWDQA_SHARED_DATA; the first N of train) become
validation items: 30% get another question's answer (truth ``reject``), the rest keep their own
(``accept``); see crowd/simulation.py. Crowds:

* ``mixed``: 12 careful, 8 careless, 6 spammers (always ``accept``, taking twice the HITs), 2 adversarial;
* uniform-quality crowds: 20 careful, 20 careless, and 10 careful + 10 careless.

Each item is judged by k distinct workers; each crowd runs with seeds 0..S-1. The targets (issue 28):
Dawid-Skene at least 1 point above majority vote on the mixed crowd, never more than 0.5 below it on the
uniform ones, and 10,000 labels aggregated by the default method in under 5 s. The last line is a JSON
object with every figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.importers.mcq import read_sciq  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from crowd.aggregation import DEFAULT_METHOD, METHODS, aggregate  # noqa: E402
from crowd.simulation import (  # noqa: E402
    ADVERSARIAL,
    CAREFUL,
    CARELESS,
    SPAMMER,
    accuracy,
    make_crowd,
    sciq_items,
    simulate,
)

CROWDS: dict[str, tuple[dict[str, int], dict[str, float]]] = {
    "mixed": ({CAREFUL: 12, CARELESS: 8, SPAMMER: 6, ADVERSARIAL: 2}, {SPAMMER: 2.0}),
    "careful": ({CAREFUL: 20}, {}),
    "careless": ({CARELESS: 20}, {}),
    "careful+careless": ({CAREFUL: 10, CARELESS: 10}, {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=2000, help="real SciQ questions (items)")
    parser.add_argument("--k", type=int, default=3, help="validators per question")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per crowd (0..S-1)")
    parser.add_argument("--bad-share", type=float, default=0.3, help="share of items with a false answer")
    parser.add_argument(
        "--block-below", type=float, default=0.6, help="skill under which a worker is blocked"
    )
    parser.add_argument("--speed-labels", type=int, default=10_000, help="labels in the timing run")
    args = parser.parse_args()
    root = dataset_dir("sciq")
    if root is None:
        sys.exit("sciq data not found; set CROWDQA_SHARED_DATA")
    rows = read_sciq(root, ("train",))
    questions = [(r.id, r.question, r.answer) for r in rows]
    items = sciq_items(questions[: args.questions], args.bad_share, seed=0)
    print(f"{len(items)} real SciQ questions, {args.k} validators each, {args.seeds} seeds per crowd")

    report: dict[str, dict] = {}
    for crowd_name, (mix, workload) in CROWDS.items():
        scores: dict[str, list[float]] = {m: [] for m in METHODS}
        seconds: dict[str, list[float]] = {m: [] for m in METHODS}
        blocked: dict[str, list[dict[str, int]]] = {m: [] for m in METHODS}
        for seed in range(args.seeds):
            crowd = make_crowd(mix, seed=seed)
            kinds = {w.name: w.kind for w in crowd}
            judgements = simulate(items, crowd, k=args.k, seed=seed, workload=workload)
            for method in METHODS:
                result = aggregate(judgements, method, seed=seed, with_alpha=False)
                verdicts = {item: v.label for item, v in result.items.items()}
                scores[method].append(accuracy(verdicts, items))
                seconds[method].append(result.seconds)
                by_kind = {k: 0 for k in mix}
                for worker in result.below(args.block_below, min_labels=20):
                    by_kind[kinds[worker]] += 1
                blocked[method].append(by_kind)
        report[crowd_name] = {
            method: {
                "accuracy": round(statistics.mean(scores[method]), 4),
                "accuracy_per_seed": [round(s, 4) for s in scores[method]],
                "seconds": round(statistics.median(seconds[method]), 2),
                "blocked_seed0": blocked[method][0],
            }
            for method in METHODS
        }
        gap = [ds - mv for ds, mv in zip(scores["dawid_skene"], scores["majority"], strict=True)]
        report[crowd_name]["dawid_skene_minus_majority_points"] = {
            "mean": round(100 * statistics.mean(gap), 2),
            "worst": round(100 * min(gap), 2),
        }
        print(f"\n{crowd_name} crowd {mix}:")
        print(f"  {'method':<12} {'accuracy':>9} {'seconds':>8}  blocked (seed 0, by kind)")
        for method in METHODS:
            row = report[crowd_name][method]
            print(f"  {method:<12} {row['accuracy']:>9.4f} {row['seconds']:>8.2f}  {row['blocked_seed0']}")
        print(f"  Dawid-Skene - majority: {report[crowd_name]['dawid_skene_minus_majority_points']} points")

    # Timing at the target size: a mixed crowd, as many items as it takes to reach the label count.
    n_items = -(-args.speed_labels // args.k)
    timing_questions = (questions * (1 + n_items // len(questions)))[:n_items]
    timing_items = sciq_items(
        [(f"{qid}-{i}", q, a) for i, (qid, q, a) in enumerate(timing_questions)], args.bad_share, seed=1
    )
    mix, workload = CROWDS["mixed"]
    judgements = simulate(timing_items, make_crowd(mix, seed=1), k=args.k, seed=1, workload=workload)
    timing: dict[str, float] = {}
    for method in METHODS:
        started = time.perf_counter()
        aggregate(judgements, method, with_alpha=(method == DEFAULT_METHOD))
        timing[method] = round(time.perf_counter() - started, 2)
    print(
        f"\n{len(judgements)} labels, wall seconds per method (default {DEFAULT_METHOD} with alpha): {timing}"
    )
    print(
        json.dumps(
            {"items": len(items), "k": args.k, "crowds": report, "timing": timing, "labels": len(judgements)}
        )
    )


if __name__ == "__main__":
    main()
