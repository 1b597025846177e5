"""Latency of the two-stage distractor ranker on the full candidate set, and its agreement with full scoring.

Measures, per SciQ test question, the wall time of ``suggest(q, a, top=6)`` (stage-1 shortlist from all of
C, then the forest), and for a few questions whether the two-stage top 6 equals the top 6 obtained by
scoring every candidate of C with the forest (``rank_full``, about a minute per question).

Usage (after benchmarks/distractor_quality.py has trained a model into DIR):
    .venv/bin/python benchmarks/distractor_speed.py --model-dir DIR --questions 100 --full 5
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distractors.mcq_data import load_sciq  # noqa: E402
from distractors.ranker import load_ranker  # noqa: E402


def main() -> None:
    shared = Path(
        os.environ.get("CROWDQA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--sciq", type=Path, default=shared / "sciq")
    parser.add_argument("--questions", type=int, default=100, help="questions timed with suggest()")
    parser.add_argument("--full", type=int, default=5, help="questions also scored on all of C")
    parser.add_argument("--n-jobs", type=int, default=1, help="forest threads")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    started = time.perf_counter()
    ranker = load_ranker(args.model_dir, n_jobs=args.n_jobs)
    load_s = time.perf_counter() - started
    sample = random.Random(args.seed).sample(load_sciq(args.sciq, "test"), args.questions)
    latencies, sizes = [], []
    for q in sample:
        t = time.perf_counter()
        ranker.suggest(q.question, q.answer, top=6)
        latencies.append(time.perf_counter() - t)
        sizes.append(len(ranker.shortlist(q.question, q.answer)))
    agree, overlap, full_times = 0, [], []
    for q in sample[: args.full]:
        t = time.perf_counter()
        full = {s.text for s in ranker.rank_full(q.question, q.answer, top=6)}
        full_times.append(time.perf_counter() - t)
        two_stage = {s.text for s in ranker.suggest(q.question, q.answer, top=6)}
        agree += full == two_stage
        overlap.append(len(full & two_stage) / 6)
        print(f"[full] {q.answer!r}: overlap {len(full & two_stage)}/6 in {full_times[-1]:.0f} s", flush=True)
    lat = np.asarray(latencies)
    result = {
        "candidate_set_size": len(ranker.parts.candidates),
        "load_s": round(load_s, 2),
        "questions": len(lat),
        "mean_shortlist_size": float(np.mean(sizes)),
        "latency_p50_s": round(float(np.percentile(lat, 50)), 3),
        "latency_p95_s": round(float(np.percentile(lat, 95)), 3),
        "latency_max_s": round(float(lat.max()), 3),
        "first_call_s": round(float(lat[0]), 3),
        "full_scoring_questions": len(full_times),
        "top6_identical_fraction": agree / len(full_times) if full_times else None,
        "top6_mean_overlap": float(np.mean(overlap)) if overlap else None,
        "full_scoring_mean_s": round(float(np.mean(full_times)), 1) if full_times else None,
        "forest_n_jobs": args.n_jobs,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
