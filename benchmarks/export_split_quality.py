"""How close group splits of the real SyllabusQA come to the target ratios and type mix, over many seeds.

Usage: .venv/bin/python benchmarks/export_split_quality.py [--seeds 50] [--ratios 0.8,0.1,0.1]

Reads the real SyllabusQA CSVs (../shared/data/syllabusqa, or CROWDQA_SHARED_DATA), splits the 5,078
pairs by syllabus with seeds 0..N-1 and prints, over the seeds, the worst and mean absolute gap between
achieved and target shares (percentage points) and the worst gap of any question type's share within a
split from its overall share. The original release's split is shown for comparison.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.importers.syllabusqa_csv import read_qa_rows  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from exports.records import qa_record_from_qa_row  # noqa: E402
from exports.splits import SPLITS, SplitItem, group_split  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50, help="number of seeds (0..N-1)")
    parser.add_argument("--ratios", default="0.8,0.1,0.1", help="train,val,test shares")
    args = parser.parse_args()
    ratios = [float(x) for x in args.ratios.split(",")]
    root = dataset_dir("syllabusqa")
    if root is None:
        sys.exit("syllabusqa data not found; set CROWDQA_SHARED_DATA")

    items, original = [], {}
    for row in read_qa_rows(root):
        record = qa_record_from_qa_row(row)
        items.append(SplitItem(record.id, record.document_id, record.stratum))
        original[record.id] = row.split
    overall = Counter(i.stratum for i in items)
    n = len(items)

    def gaps(item_split: dict[str, str]) -> tuple[float, float]:
        counts = Counter(item_split.values())
        size_gap = max(abs(counts[s] / n - r) for s, r in zip(SPLITS, ratios, strict=True)) * 100
        type_gap = 0.0
        for s in SPLITS:
            mix = Counter(i.stratum for i in items if item_split[i.id] == s)
            if counts[s]:
                type_gap = max(type_gap, *(abs(mix[t] / counts[s] - c / n) * 100 for t, c in overall.items()))
        return size_gap, type_gap

    size_gaps, type_gaps = [], []
    for seed in range(args.seeds):
        result = group_split(items, ratios=ratios, seed=seed)
        size_gap, type_gap = gaps(dict(result.items))
        size_gaps.append(size_gap)
        type_gaps.append(type_gap)
    orig_counts = Counter(original.values())
    print(f"{n} pairs, {len({i.group for i in items})} syllabi, target {ratios}, {args.seeds} seeds")
    print(f"size gap (pp):     mean {statistics.fmean(size_gaps):.2f}  worst {max(size_gaps):.2f}")
    print(f"type-mix gap (pp): mean {statistics.fmean(type_gaps):.2f}  worst {max(type_gaps):.2f}")
    shares = ", ".join(f"{orig_counts[s] / n:.3f}" for s in SPLITS)
    print(f"original release: {dict(orig_counts)} = {shares}")
    print(
        json.dumps(
            {
                "seeds": args.seeds,
                "size_gap_pp_mean": round(statistics.fmean(size_gaps), 3),
                "size_gap_pp_worst": round(max(size_gaps), 3),
                "type_gap_pp_mean": round(statistics.fmean(type_gaps), 3),
                "type_gap_pp_worst": round(max(type_gaps), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
