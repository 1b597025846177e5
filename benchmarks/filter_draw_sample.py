"""Draw the sentences of the filter's labelled set from SciQ support passages, reproducibly.

Why: the labelled set (tests/data/filters/labelled_sentences.jsonl) must be re-creatable from the
real data, so this script fixes the seed, the split and the naive sentence splitter used to draw it.
It prints one JSON object per line: {"source", "text"}; labels are added by hand (see
tests/data/filters/LABELLING_GUIDE.md).

Usage:
    python benchmarks/filter_draw_sample.py /work/shared/data/sciq --n 330 --seed 2017 > sample.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

# Deliberately not spaCy: the sample must not depend on the component under test.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")


def draw(sciq_dir: Path, n: int, seed: int) -> list[dict[str, str]]:
    """Pick ``n`` sentences, one from each of ``n`` distinct train support passages.

    Args:
        sciq_dir: folder holding SciQ's ``train.json``.
        n: number of sentences to draw.
        seed: seed of the random generator.

    Returns:
        Dicts with ``source`` ("train.json#<record index>") and ``text``.
    """
    records = json.loads((sciq_dir / "train.json").read_text(encoding="utf-8"))
    indices = [i for i, record in enumerate(records) if record["support"].strip()]
    rng = random.Random(seed)
    rng.shuffle(indices)
    sample: list[dict[str, str]] = []
    for index in indices:
        sentences = [s.strip() for s in _SENTENCE_END.split(records[index]["support"]) if s.strip()]
        if not sentences:
            continue
        sample.append({"source": f"train.json#{index}", "text": rng.choice(sentences)})
        if len(sample) == n:
            break
    return sample


def main() -> None:
    """Parse arguments and print the sample as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sciq_dir", type=Path, help="folder with SciQ train.json")
    parser.add_argument("--n", type=int, default=330, help="number of sentences")
    parser.add_argument("--seed", type=int, default=2017, help="random seed")
    args = parser.parse_args()
    for row in draw(args.sciq_dir, args.n, args.seed):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
