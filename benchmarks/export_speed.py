"""Time and peak memory of building a release of generated SyllabusQA-style QA pairs.

Usage: .venv/bin/python benchmarks/export_speed.py [--pairs 100000] [--formats csv,jsonl,parquet]

Generates QA pairs shaped like SyllabusQA (14 per HIT, 7 types, ~12-token questions, ~23-token answers,
spans and reasoning steps as the type requires, about 80 pairs per syllabus), builds a full release
(group split, all formats, card with plots, privacy scan, manifest) into a temporary folder, then
verifies it. Prints one JSON line at the end. Target: under 30 s for 100,000 pairs.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crowd.pseudonyms import pseudonymize_worker  # noqa: E402
from exports.card import CardInputs  # noqa: E402
from exports.records import QUESTION_TYPES, QARecord  # noqa: E402
from exports.release import build_release  # noqa: E402
from exports.release_files import verify_release  # noqa: E402
from exports.splits import SplitItem, group_split  # noqa: E402
from exports.statistics import DocumentInfo  # noqa: E402

WORDS = (
    "the course exam grade homework office hours syllabus week lecture quiz project deadline late policy "
    "final midterm attendance participation reading textbook lab section instructor TA email canvas "
    "submission percent points credit semester schedule discussion group report presentation"
).split()
SPANS = {"yes/no": 1, "single factual": 1, "multi factual": 3, "summarization": 3}
STEPS = {"single reasoning": 1, "multi reasoning": 3}


def _text(rng: random.Random, mean: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, int(rng.gauss(mean, mean / 3))))) + "."


def generate(n: int, seed: int = 0) -> tuple[list[QARecord], dict[str, DocumentInfo]]:
    """Return ``n`` synthetic QA records and their syllabi's page/token counts."""
    rng = random.Random(seed)
    records = []
    n_docs = max(1, n // 80)
    for i in range(n):
        qtype = QUESTION_TYPES[(i // 2) % 7]
        hit = i // 14
        doc = f"syllabus-{rng.randrange(n_docs) if i % 14 == 0 else hit % n_docs:05d}"
        records.append(
            QARecord(
                id=f"qa{i:07d}",
                syllabus_name=doc,
                question_type=qtype,
                question=_text(rng, 12),
                answer="No/insufficient information" if qtype == "no answer" else _text(rng, 23),
                answer_spans=tuple(_text(rng, 15) for _ in range(SPANS.get(qtype, 0))),
                reasoning_steps=tuple(_text(rng, 15) for _ in range(STEPS.get(qtype, 0))),
                worker=pseudonymize_worker(f"A{hit % 500:013d}", "benchmark-salt-0123456789"),
            )
        )
    docs = {
        f"syllabus-{d:05d}": DocumentInfo(pages=rng.randint(2, 27), tokens=rng.randint(800, 14000))
        for d in range(n_docs)
    }
    return records, docs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000, help="number of QA pairs to generate")
    parser.add_argument("--formats", default="csv,jsonl,parquet", help="comma-separated formats")
    parser.add_argument("--seed", type=int, default=0, help="split seed")
    args = parser.parse_args()

    t0 = time.perf_counter()
    records, docs = generate(args.pairs)
    t_gen = time.perf_counter() - t0

    t0 = time.perf_counter()
    split = group_split([SplitItem(r.id, r.document_id, r.stratum) for r in records], seed=args.seed)
    t_split = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        result = build_release(
            records,
            name="bench",
            version="1",
            out_dir=Path(tmp),
            formats=args.formats,
            seed=args.seed,
            card_inputs=CardInputs(documents=docs),
        )
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        verify_release(result.path)
        t_verify = time.perf_counter() - t0
        size = sum(f["bytes"] for f in result.manifest["files"])

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"generated {args.pairs:,} pairs over {len(docs):,} syllabi in {t_gen:.1f} s")
    print(f"group split alone: {t_split:.2f} s; achieved {dict(split.achieved_ratios)}")
    print(
        f"build_release ({args.formats}, card, privacy scan, manifest): {t_build:.1f} s, {size / 1e6:.1f} MB"
    )
    print(f"verify_release: {t_verify:.1f} s")
    print(f"peak RSS of the process: {peak_mb:.0f} MB")
    summary = {
        "pairs": args.pairs,
        "documents": len(docs),
        "build_s": round(t_build, 2),
        "split_s": round(t_split, 2),
        "verify_s": round(t_verify, 2),
        "peak_rss_mb": round(peak_mb),
        "release_mb": round(size / 1e6, 1),
        "counts": dict(result.counts),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
