"""Sentences per second of the sentence filter over SciQ support passages.

Splits the passages into sentences once (spaCy senter, not timed), then times ``filter_sentences``
over them, for n_process 1 and 2.

Usage:
    .venv/bin/python benchmarks/filter_throughput.py /work/shared/data/sciq [--limit 20000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from filters.sentence_filter import filter_sentences, load_pipeline  # noqa: E402
from filters.sentence_rules import FilterOptions  # noqa: E402


def main() -> None:
    """Print sentences/second for each process count and a JSON summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sciq_dir", type=Path)
    parser.add_argument("--limit", type=int, default=20000, help="number of sentences to time")
    args = parser.parse_args()
    records = json.loads((args.sciq_dir / "train.json").read_text(encoding="utf-8"))
    nlp = load_pipeline()
    supports = [" ".join(r["support"].split()) for r in records if r["support"].strip()]
    sentences: list[str] = []
    with nlp.select_pipes(enable=["senter"]):
        for doc in nlp.pipe(supports, batch_size=256):
            sentences.extend(s.text for s in doc.sents if s.text.strip())
            if len(sentences) >= args.limit:
                break
    sentences = sentences[: args.limit]
    words = sum(len(s.split()) for s in sentences)
    print(f"{len(sentences)} sentences, {words} words")
    results = {}
    for n_process in (1, 2):
        options = FilterOptions(n_process=n_process, batch_size=512)
        list(filter_sentences(sentences[:200], options))  # warm-up (model load, worker start)
        start = time.perf_counter()
        accepted = sum(v.accepted for v in filter_sentences(sentences, options))
        elapsed = time.perf_counter() - start
        results[f"n_process_{n_process}"] = round(len(sentences) / elapsed, 1)
        print(
            f"n_process={n_process}: {len(sentences) / elapsed:,.0f} sentences/s "
            f"({words / elapsed:,.0f} words/s), {accepted} accepted, {elapsed:.1f} s"
        )
    print(json.dumps({"sentences": len(sentences), **results}))


if __name__ == "__main__":
    main()
