"""Run the LFQA 4-criteria judge for real with the default small model on a few SyllabusQA test items.

Each item is the real question, its syllabus text (the judge's context) and its reference answer; the
answer judged is the search baseline's (top-1 BM25 chunk). Conditions:

- ``search+ref``: the default path of ``judge_item_scores``: search answer as Assistant 1, the
  reference answer as Assistant 2 (the paper's two-assistant prompt).
- ``search``: the search answer alone (single-answer prompt).
- ``reference``: the reference answer alone (single-answer prompt): a useful judge scores it higher.

Prints per-criterion means, the share of items with an undefined criterion after the repair request,
how many repair requests the first replies needed, and seconds per item. SmolLM2-135M is far too small
to be a reliable judge; this measures that the pipeline runs and how its output parses, not quality.

Usage:
    .venv/bin/python benchmarks/lfqa_judge_smoke.py --items 5
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.importers.syllabusqa_csv import read_split_csv, split_dir  # noqa: E402
from annotation.textnorm import decode_mac_roman  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.baselines import run_system  # noqa: E402
from evaluation.factqa import JsonFileJudgeCache  # noqa: E402
from evaluation.lfqa_judge import CRITERIA, judge_item_scores  # noqa: E402
from evaluation.llm import ChatMessage, HFCausalLMBackend  # noqa: E402
from evaluation.schema import Prediction, QAItem  # noqa: E402


class CountingBackend:
    """Wrap a backend to count calls and keep the replies (same name, so caches stay valid)."""

    def __init__(self, inner: HFCausalLMBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.replies: list[str] = []

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        reply = self.inner.chat(messages, max_new_tokens=max_new_tokens, temperature=temperature)
        self.replies.append(reply)
        return reply


def load_items(root: Path, count: int) -> list[QAItem]:
    """The first ``count`` test rows that have an answer, with their syllabus texts."""
    items: list[QAItem] = []
    text_dir = root / "syllabi" / "syllabi_redacted" / "text"
    for row in read_split_csv(split_dir(root) / "test.csv"):
        if row.question_type == "no answer" or not row.answer.strip():
            continue
        path = text_dir / f"{row.syllabus_name}.txt"
        items.append(
            QAItem(
                id=row.id,
                question=row.question,
                answer=row.answer,
                question_type=row.question_type,
                document_name=row.syllabus_name,
                document=decode_mac_roman(path.read_bytes(), path),
            )
        )
        if len(items) == count:
            break
    return items


def mean(values: list[Optional[float]]) -> Optional[float]:
    defined = [v for v in values if v is not None]
    return statistics.fmean(defined) if defined else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=5, help="How many test items (default 5).")
    parser.add_argument(
        "--conditions", default="search+ref,search,reference", help="Comma list of conditions to run."
    )
    parser.add_argument("--cache", type=Path, help="JSON judge cache (default: none, so timings are real).")
    parser.add_argument("--show", type=int, default=2, help="Print the first N raw judge replies.")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("syllabusqa not found under the shared data folder (set CROWDQA_SHARED_DATA)")
    items = load_items(root, args.items)
    search = run_system("search", items)
    backend = CountingBackend(HFCausalLMBackend())
    started = time.perf_counter()
    backend.inner.load()
    print(f"model {backend.name} loaded in {time.perf_counter() - started:.1f}s; {len(items)} items")
    cache = JsonFileJudgeCache(args.cache) if args.cache else None
    results: dict[str, dict] = {}
    for condition in args.conditions.split(","):
        if condition == "search+ref":
            judged_items, predictions = items, search
        elif condition == "search":
            judged_items, predictions = [replace(i, answer="") for i in items], search
        elif condition == "reference":
            judged_items = [replace(i, answer="") for i in items]
            predictions = [Prediction(id=i.id, answer=i.answer) for i in items]
        else:
            raise SystemExit(f"unknown condition '{condition}'")
        calls_before = len(backend.replies)
        clock = time.perf_counter()
        rows = judge_item_scores(judged_items, predictions, backend, cache=cache)
        seconds = time.perf_counter() - clock
        calls = len(backend.replies) - calls_before
        undefined = sum(1 for row in rows if any(row[name] is None for name in CRITERIA))
        results[condition] = {
            "items": len(rows),
            **{name: mean([row[name] for row in rows]) for name in CRITERIA},
            "undefined_item_rate": undefined / len(rows),
            "undefined_score_rate": sum(row[n] is None for row in rows for n in CRITERIA) / (4 * len(rows)),
            "judge_calls": calls,
            "repair_requests": calls - len(rows) if cache is None else None,
            "seconds_per_item": seconds / len(rows),
        }
        print(f"\n== {condition}")
        for key, value in results[condition].items():
            print(f"{key:>22}: {value:.3f}" if isinstance(value, float) else f"{key:>22}: {value}")
    for index, reply in enumerate(backend.replies[: args.show]):
        print(f"\n-- judge reply {index + 1} (first 400 characters):\n{reply[:400]}")
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
