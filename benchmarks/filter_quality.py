"""Per-rule precision/recall of the sentence filter against the hand-labelled SciQ sentences.

Also the precision and recall of "accept" (the share of accepted sentences a person judged a good
standalone, exam-worthy statement); the SciQ paper tuned its rules for precision first.

Usage:
    .venv/bin/python benchmarks/filter_quality.py [--labels tests/data/filters/labelled_sentences.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from filters.sentence_filter import filter_sentences  # noqa: E402
from filters.sentence_rules import RULE_CODES  # noqa: E402

DEFAULT_LABELS = (
    Path(__file__).resolve().parents[1] / "tests" / "data" / "filters" / "labelled_sentences.jsonl"
)


def ratio(num: int, den: int) -> float | None:
    """num/den, or None when undefined."""
    return None if den == 0 else num / den


def fmt(value: float | None) -> str:
    """Three decimals, or n/a."""
    return "n/a" if value is None else f"{value:.3f}"


def main() -> None:
    """Run the filter over the labelled set and print a markdown table plus a JSON summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=DEFAULT_LABELS)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    verdicts = list(filter_sentences(r["text"] for r in rows))
    print(f"{len(rows)} labelled sentences, {sum(r['accepted'] for r in rows)} judged good\n")
    print("| rule | gold | fired | precision | recall |")
    print("| --- | ---: | ---: | ---: | ---: |")
    per_rule = {}
    for code in RULE_CODES:
        gold = {i for i, r in enumerate(rows) if code in r["rules"]}
        pred = {i for i, v in enumerate(verdicts) if code in v.rules}
        p, r = ratio(len(gold & pred), len(pred)), ratio(len(gold & pred), len(gold))
        per_rule[code] = {"precision": p, "recall": r, "gold": len(gold), "fired": len(pred)}
        print(f"| {code} | {len(gold)} | {len(pred)} | {fmt(p)} | {fmt(r)} |")
    accepted = [i for i, v in enumerate(verdicts) if v.accepted]
    good = [i for i, r in enumerate(rows) if r["accepted"]]
    tp = len(set(accepted) & set(good))
    no_rule_gold = [i for i, r in enumerate(rows) if not r["rules"]]
    summary = {
        "sentences": len(rows),
        "accepted": len(accepted),
        "accept_precision": ratio(tp, len(accepted)),
        "accept_recall": ratio(tp, len(good)),
        "accept_precision_ceiling": ratio(sum(rows[i]["accepted"] for i in no_rule_gold), len(no_rule_gold)),
    }
    print(
        f"\naccept: {len(accepted)} sentences, precision {fmt(summary['accept_precision'])}, "
        f"recall {fmt(summary['accept_recall'])}"
    )
    ceiling = fmt(summary["accept_precision_ceiling"])
    print(f"ceiling (sentences with no gold rule that a person judged good): {ceiling}")
    wrong = [rows[i]["text"] for i in accepted if not rows[i]["accepted"]]
    print(f"\naccepted but judged not good ({len(wrong)}):")
    for text in wrong:
        print(f"  - {text}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
