"""The trained distractor ranker as the stage-2 HIT serves it: latency, never-empty, and two-stage agreement.

Loads the model directory the way the stage-2 HIT does (``distractors.ranker.load_suggester``: one forest
thread, the default shortlist) and refuses to go on when that gives the WordNet fallback (train a ranker
first: ``manage.py train_distractor_ranker --sync --out DIR`` or benchmarks/distractor_quality.py). Then:

1. after one warm-up call, ``suggest(q, a, top=6)`` for every SciQ test question (1,000): latency p50, p95
   and max per question (wall time, and this process's CPU time, which is what the wall time would be on
   an idle core of this shared machine), empty and short lists, suggestions by source
   (benchmarks/distractor_never_empty.py's ``measure``);
   with ``--quality N``, on N of them, each stage-1 config's recall@6, recall@50 and MRR of the real SciQ
   distractors (as benchmarks/distractor_quality.py measures them);
2. on ``--full`` of those questions (every 50th), the two-stage list (stage-1 shortlist, then the forest)
   against scoring every candidate of C with the forest (``rank_full``, about a minute a question):
   - top-6 overlap and top-1 agreement (the same text);
   - top-6 as good as full: the share of the two-stage top 6 whose score reaches the full top 6's lowest
     score (the forest gives many candidates the same score, and ties are ordered by text, so a tied
     candidate outside the shortlist can take a full-scoring place without being better);
   - Kendall's tau between the full-scoring order of the full top 20 and their two-stage order (a
     candidate the shortlist missed is placed after every shortlisted one), and how many of the full top
     50 the shortlist holds.

Usage:
    .venv/bin/python benchmarks/distractor_speed.py --model-dir DIR [--questions 1000] [--full 20]
        [--quality 300] [--answer-neighbours N --context-neighbours N --sibling-limit N --swap-neighbours N]
        [--compare A,C,S,W ...]   (another stage-1 config for the quality and agreement parts)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from distractor_never_empty import measure, report  # noqa: E402

from config.shared_data import shared_data_dir  # noqa: E402
from distractors.mcq_data import McqQuestion, load_sciq  # noqa: E402
from distractors.ranker import DistractorRanker, load_suggester  # noqa: E402
from distractors.shortlist import DEFAULT_SHORTLIST, ShortlistConfig  # noqa: E402


def shortlist_config(text: str) -> ShortlistConfig:
    """Parse 'answer,context,siblings,swaps' neighbour counts."""
    return ShortlistConfig(*(int(x) for x in text.split(",")))


def agreement(
    ranker: DistractorRanker, q: McqQuestion, configs: dict[str, ShortlistConfig], top: int = 6
) -> dict[str, Any]:
    """Compare the two-stage top ``top`` of one question, for each stage-1 config, with scoring all of C.

    All of C is scored once; each config's two-stage list is its own shortlist ranked by the forest.
    """
    from scipy.stats import kendalltau

    t = time.perf_counter()
    full = ranker.rank_full(q.question, q.answer)
    out: dict[str, Any] = {"answer": q.answer, "full_s": time.perf_counter() - t, "full": []}
    full_top = [s.text for s in full[:top]]
    full_score = {s.text: s.score for s in full}
    floor = full[top - 1].score
    head = full[:20]
    out["full"] = full_top
    out["ties_at_floor"] = sum(1 for s in full if s.score == floor)
    kept = ranker.generator.config
    for label, config in configs.items():
        ranker.generator.config = config
        texts = [s.text for s in ranker.suggest(q.question, q.answer, top=top)]
        shortlist = ranker.shortlist(q.question, q.answer)
        position = {s.text: s.rank for s in ranker.rank(q.question, q.answer, shortlist)}
        tau = kendalltau(range(len(head)), [position.get(s.text, len(position) + 1) for s in head]).statistic
        out[label] = {
            "overlap": len(set(texts) & set(full_top)),
            "top1": bool(texts) and texts[0] == full_top[0],
            "as_good": sum(1 for text in texts if full_score.get(text, -1.0) >= floor),
            "tau": float(tau),
            "top50_in_shortlist": sum(1 for s in full[:50] if s.text in position),
            "shortlist": len(shortlist),
            "two_stage": texts,
        }
    ranker.generator.config = kept
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--sciq", type=Path, default=shared_data_dir() / "sciq")
    parser.add_argument("--questions", type=int, default=1000, help="questions timed with suggest()")
    parser.add_argument("--full", type=int, default=20, help="questions also scored on all of C")
    parser.add_argument("--full-n-jobs", type=int, default=2, help="forest threads for full scoring only")
    parser.add_argument("--top", type=int, default=6)
    parser.add_argument(
        "--quality", type=int, default=0, help="questions on which each config's recall@6 / MRR is measured"
    )
    for field, value in asdict(DEFAULT_SHORTLIST).items():
        parser.add_argument(f"--{field.replace('_', '-')}", type=int, default=value, help="stage-1 size")
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="A,C,S,W",
        help="another stage-1 config (answer, context, sibling, swap counts) for the agreement part",
    )
    args = parser.parse_args()

    started = time.perf_counter()
    ranker = load_suggester(args.model_dir)
    if not isinstance(ranker, DistractorRanker):
        raise SystemExit(f"{args.model_dir}: no trained ranker (the stage-2 HIT would use {ranker.name})")
    ranker.generator.config = ShortlistConfig(**{f: getattr(args, f) for f in asdict(DEFAULT_SHORTLIST)})
    load_s = time.perf_counter() - started
    questions = load_sciq(args.sciq, "test")[: args.questions]
    print(f"model loaded in {load_s:.1f} s; C = {len(ranker.parts.candidates):,}; {ranker.generator.config}")
    result = measure(ranker, questions, args.top)
    report(ranker, result, args.top)
    every = max(1, len(questions) // 100)
    sizes = [len(ranker.shortlist(q.question, q.answer)) for q in questions[::every]]
    print(f"mean shortlist: {statistics.mean(sizes):.0f} candidates (every {every}th question)")

    configs = {"timed": ranker.generator.config}
    configs.update({text: shortlist_config(text) for text in args.compare})
    if args.quality:
        from distractors.evaluation import ranks_of, summarize

        step = max(1, len(questions) // args.quality)
        kept = ranker.generator.config
        for label, config in configs.items():
            ranker.generator.config = config
            ranks = []
            for q in questions[::step][: args.quality]:
                shortlist = ranker.shortlist(q.question, q.answer)
                ranks.append(
                    ranks_of([s.text for s in ranker.rank(q.question, q.answer, shortlist)], q.distractors)
                )
            quality = {**summarize(ranks, 6), "recall@50": summarize(ranks, 50)["recall@50"]}
            print(f"[quality] {label} {asdict(config)}: {json.dumps(quality)}", flush=True)
        ranker.generator.config = kept
    rows = []
    if args.full:
        ranker.forest.n_jobs = args.full_n_jobs
        step = max(1, len(questions) // args.full)
        for q in questions[::step][: args.full]:
            row = agreement(ranker, q, configs, args.top)
            rows.append(row)
            cells = "; ".join(
                f"{label}: {row[label]['overlap']}/{args.top}, top-1 {row[label]['top1']}, "
                f"as good {row[label]['as_good']}, tau {row[label]['tau']:.2f}, "
                f"top-50 kept {row[label]['top50_in_shortlist']}, {row[label]['two_stage'][:3]}"
                for label in configs
            )
            print(
                f"[full] {row['answer']!r} ({row['full_s']:.0f} s, {row['ties_at_floor']} tied at the 6th "
                f"score, full {row['full'][:3]}): {cells}",
                flush=True,
            )
    summary: dict[str, Any] = {
        "model": ranker.model_version,
        "shortlist": asdict(ranker.generator.config),
        "load_s": round(load_s, 1),
        **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in result.items() if k != "short"},
        "short": len(result["short"]),
        "mean_shortlist": round(statistics.mean(sizes)),
    }
    if rows:
        n = len(rows)
        summary["full_questions"] = n
        summary["full_scoring_mean_s"] = round(statistics.mean(r["full_s"] for r in rows), 1)
        for label in configs:
            cells = [r[label] for r in rows]
            # tau is undefined (NaN) when the shortlist holds none of the full top 20
            taus = [c["tau"] for c in cells if c["tau"] == c["tau"]]
            summary[f"agreement[{label}]"] = {
                "mean_shortlist": round(statistics.mean(c["shortlist"] for c in cells)),
                "top6_mean_overlap": round(sum(c["overlap"] for c in cells) / (args.top * n), 3),
                "top6_identical": sum(c["overlap"] == args.top for c in cells),
                "top1_agreement": sum(c["top1"] for c in cells),
                "top6_as_good": round(sum(c["as_good"] for c in cells) / (args.top * n), 3),
                "kendall_tau_top20_mean": round(statistics.mean(taus), 3) if taus else None,
                "kendall_tau_defined": len(taus),
                "full_top50_in_shortlist_mean": round(
                    statistics.mean(c["top50_in_shortlist"] for c in cells), 1
                ),
            }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
