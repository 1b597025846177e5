"""Train the distractor ranker on ARC + SciQ train and measure its quality (prints numbers).

Held-out classification accuracy (paper: 99.4% train, 94.2% validation), then ranking quality on SciQ
test: recall@6 and MRR of the real distractors when the two-stage ranker orders the whole candidate set
C (a real distractor outside the stage-1 shortlist counts as not ranked), against the
embedding-nearest-neighbour baseline ordering all of C by cosine to the answer.

Usage:
    .venv/bin/python benchmarks/distractor_quality.py --out /tmp/crowdqa_models/distractors
    .venv/bin/python benchmarks/distractor_quality.py --out DIR --skip-train --eval-questions 1000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from distractors.evaluation import ranks_of, summarize  # noqa: E402
from distractors.fallback import EmbeddingNeighbourFallback  # noqa: E402
from distractors.mcq_data import load_sciq  # noqa: E402
from distractors.ranker import load_ranker  # noqa: E402
from distractors.text import normalize  # noqa: E402
from distractors.training import TrainConfig, train  # noqa: E402

TABLE1 = [
    (
        "Compounds containing an atom of what element, bonded in a hydrocarbon framework, "
        "are classified as amines?",
        "nitrogen",
    ),
    ("Elements have orbitals that are filled with what?", "electrons"),
    ("Many species use their body shape and coloration to avoid being detected by what?", "predators"),
    (
        "The small amount of energy input necessary for all chemical reactions to occur is called what?",
        "activation energy",
    ),
]


def main() -> None:
    shared = Path(
        os.environ.get("CROWDQA_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="model directory (artifacts written here)")
    parser.add_argument("--arc", type=Path, default=shared / "arc")
    parser.add_argument("--sciq", type=Path, default=shared / "sciq")
    parser.add_argument("--trees", type=int, default=500)
    parser.add_argument("--max-questions", type=int, default=None)
    parser.add_argument(
        "--eval-questions", type=int, default=300, help="SciQ test questions to rank (<= 1000)"
    )
    parser.add_argument("--skip-train", action="store_true", help="reuse the model already in --out")
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    if not args.skip_train:
        config = TrainConfig(
            arc_dir=args.arc,
            sciq_dir=args.sciq,
            n_trees=args.trees,
            max_questions=args.max_questions,
            seed=args.seed,
        )
        last = [""]

        def progress(stage: str, fraction: float) -> None:
            if stage != last[0]:
                print(f"[train] {stage}", flush=True)
                last[0] = stage

        metrics = train(config, args.out, progress)
        print("training metrics:", json.dumps(metrics, indent=1), flush=True)

    ranker = load_ranker(args.out, n_jobs=2)
    baseline = EmbeddingNeighbourFallback(ranker.index)
    test = load_sciq(args.sciq, "test")
    sample = random.Random(args.seed).sample(test, min(args.eval_questions, len(test)))
    candidates = ranker.parts.candidates
    in_c = sum(normalize(d) in candidates for q in sample for d in q.distractors)
    model_ranks, base_ranks, shortlist_sizes = [], [], []
    started = time.perf_counter()
    for i, q in enumerate(sample, start=1):
        shortlist = ranker.shortlist(q.question, q.answer)
        shortlist_sizes.append(len(shortlist))
        ranked = [s.text for s in ranker.rank(q.question, q.answer, shortlist)]
        model_ranks.append(ranks_of(ranked, q.distractors))
        base = [t for t, _ in baseline.rank(q.question, q.answer, len(ranker.index))]
        base_ranks.append(ranks_of(base, q.distractors))
        if i % 50 == 0:
            print(f"[eval] {i}/{len(sample)} ({time.perf_counter() - started:.0f} s)", flush=True)
    result = {
        "eval_questions": len(sample),
        "gold_distractors": sum(len(q.distractors) for q in sample),
        "gold_in_candidate_set": in_c,
        "mean_shortlist_size": sum(shortlist_sizes) / len(shortlist_sizes),
        "two_stage_ranker": summarize(model_ranks, 6),
        "two_stage_ranker_recall@50": summarize(model_ranks, 50)["recall@50"],
        "embedding_nn_baseline": summarize(base_ranks, 6),
        "embedding_nn_baseline_recall@50": summarize(base_ranks, 50)["recall@50"],
    }
    print("Table 1 questions (top 6):")
    for question, answer in TABLE1:
        print(
            f"  {answer}: " + ", ".join(f"{s.text} ({s.score:.3f})" for s in ranker.suggest(question, answer))
        )
    print(json.dumps({"ranking": result, "metrics": ranker.metadata["metrics"]}))


if __name__ == "__main__":
    main()
