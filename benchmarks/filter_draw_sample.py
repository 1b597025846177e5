"""Draw the sentences of the filter's labelled set from SciQ support passages, reproducibly.

Why: the labelled sets (tests/data/filters/labelled_sentences.jsonl, the dev set, and
tests/data/filters/heldout_sentences.jsonl, the held-out set) must be re-creatable from the real data,
so this script fixes the seed, the split and the naive sentence splitter used to draw them. It prints
one JSON object per line: {"source", "text"}; labels are added by hand (see
tests/data/filters/LABELLING_GUIDE.md). ``--exclude`` skips passages already in another set, so a
held-out sample shares no passage with the dev set.

Usage:
    python benchmarks/filter_draw_sample.py /work/shared/data/sciq --n 330 --seed 2017 > sample.jsonl
    python benchmarks/filter_draw_sample.py /work/shared/data/sciq --n 200 --seed 4242 \\
        --exclude tests/data/filters/labelled_sentences.jsonl > heldout.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
from collections.abc import Iterable
from pathlib import Path

logger = logging.getLogger(__name__)

# Deliberately not spaCy: the sample must not depend on the component under test.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")


def read_sources(paths: Iterable[Path]) -> frozenset[str]:
    """Collect the ``source`` of every row of JSONL files, so their passages can be left out of a draw.

    Args:
        paths: JSONL files whose rows each hold a ``source`` string ("train.json#<record index>").

    Returns:
        The union of the sources of all rows.

    Raises:
        ValueError: a row is not a JSON object with a string ``source``; the message names file and line.
    """
    sources: set[str] = set()
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for line_number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{line_number}: not valid JSON ({error})") from error
                source = row.get("source") if isinstance(row, dict) else None
                if not isinstance(source, str):
                    raise ValueError(
                        f"{path}:{line_number}: field 'source' missing or not a string: {source!r}"
                    )
                sources.add(source)
    return frozenset(sources)


def draw(
    sciq_dir: Path, n: int, seed: int, exclude_sources: frozenset[str] = frozenset()
) -> list[dict[str, str]]:
    """Pick ``n`` sentences, one from each of ``n`` distinct train support passages.

    Excluded passages are skipped without consuming the random generator, so with no exclusion the
    draw is exactly the one that produced the dev set.

    Args:
        sciq_dir: folder holding SciQ's ``train.json``.
        n: number of sentences to draw.
        seed: seed of the random generator.
        exclude_sources: sources ("train.json#<record index>") whose passage must not be drawn.

    Returns:
        Dicts with ``source`` ("train.json#<record index>") and ``text``.
    """
    records = json.loads((sciq_dir / "train.json").read_text(encoding="utf-8"))
    indices = [i for i, record in enumerate(records) if record["support"].strip()]
    rng = random.Random(seed)
    rng.shuffle(indices)
    sample: list[dict[str, str]] = []
    skipped = 0
    for index in indices:
        source = f"train.json#{index}"
        if source in exclude_sources:
            skipped += 1
            continue
        sentences = [s.strip() for s in _SENTENCE_END.split(records[index]["support"]) if s.strip()]
        if not sentences:
            continue
        sample.append({"source": source, "text": rng.choice(sentences)})
        if len(sample) == n:
            break
    logger.info("drew %d sentences, skipped %d excluded passages", len(sample), skipped)
    return sample


def main() -> None:
    """Parse arguments and print the sample as JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sciq_dir", type=Path, help="folder with SciQ train.json")
    parser.add_argument("--n", type=int, default=330, help="number of sentences")
    parser.add_argument("--seed", type=int, default=2017, help="random seed")
    parser.add_argument(
        "--exclude",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="JSONL file whose rows' `source` passages are skipped (repeatable)",
    )
    args = parser.parse_args()
    for row in draw(args.sciq_dir, args.n, args.seed, read_sources(args.exclude)):
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
