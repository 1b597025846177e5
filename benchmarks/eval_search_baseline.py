"""SyllabusQA search baseline (top-1 BM25 chunk, 200 chars / 50 overlap) on the real test split.

Prints ROUGE-L F1 and BERTScore F1 (local MiniLM, not the paper's DeBERTa) overall, per question type and
per answer source, and a final JSON line. Deterministic: no sampling anywhere.

    .venv/bin/python benchmarks/eval_search_baseline.py [--split test] [--no-bertscore] [--limit N]
        [--decoding {mac_roman,iso-8859-1}] [--top1-out FILE]

Decoding: the syllabus files (``text/*.txt``) are Mac Roman. ``mac_roman`` (default) reads the faithful
UTF-8 copy (``text_utf8/``); ``iso-8859-1`` reads ``text/`` as the authors' ``load_syllabi`` does
(``open(..., encoding="ISO-8859-1")``), which turns curly quotes, dashes and bullets into other characters
and so changes a few top-1 chunks. ``--top1-out`` writes each item's top-1 chunk as JSON
(``{id: [chunk]}``, the layout of the authors' ``data/retrievalauggen/*.json``) for per-item comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.importers.syllabusqa_csv import read_split_csv, split_dir  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402
from evaluation.baselines import run_system  # noqa: E402
from evaluation.metrics import score  # noqa: E402
from evaluation.schema import QAItem  # noqa: E402

DECODINGS = {"mac_roman": ("text_utf8", "utf-8"), "iso-8859-1": ("text", "iso-8859-1")}


def load_items(root: Path, split: str, decoding: str = "mac_roman") -> list[QAItem]:
    """Read a SyllabusQA split with each item's syllabus text, decoded as ``decoding`` (module doc)."""
    folder, encoding = DECODINGS[decoding]
    text_dir = root / "syllabi" / "syllabi_redacted" / folder
    syllabi: dict[str, str] = {}
    items: list[QAItem] = []
    for row in read_split_csv(split_dir(root) / f"{split}.csv"):
        name = row.syllabus_name
        if name not in syllabi:
            path = text_dir / f"{name}.txt"
            if not path.is_file():
                raise SystemExit(f"{row.source}: syllabus '{name}' not found at {path}")
            # Text mode turns the files' CR line endings into LF, as the authors' open() does.
            syllabi[name] = path.read_text(encoding=encoding)
        items.append(
            QAItem(
                id=row.id,
                question=row.question,
                answer=row.answer,
                question_type=row.question_type,
                document_name=name,
                document=syllabi[name],
            )
        )
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test", choices=["train", "val", "test"])
    parser.add_argument("--no-bertscore", action="store_true", help="ROUGE-L only")
    parser.add_argument("--limit", type=int, default=0, help="first N items only (0 = all)")
    parser.add_argument(
        "--decoding",
        default="mac_roman",
        choices=sorted(DECODINGS),
        help="syllabus text decoding: mac_roman (faithful, default) or iso-8859-1 (the authors' reading)",
    )
    parser.add_argument("--top1-out", type=Path, help="write {id: [top-1 chunk]} JSON here")
    args = parser.parse_args()
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("SyllabusQA not found (set CROWDQA_SHARED_DATA)")
    items = load_items(root, args.split, args.decoding)
    if args.limit:
        items = items[: args.limit]
    start = time.perf_counter()
    predictions = run_system("search", items)
    retrieval_s = time.perf_counter() - start
    if args.top1_out:
        top1 = {item.id: [prediction.answer] for item, prediction in zip(items, predictions, strict=True)}
        args.top1_out.write_text(json.dumps(top1, ensure_ascii=False, indent=1), encoding="utf-8")
    metrics = ["rouge_l"] if args.no_bertscore else ["rouge_l", "bertscore"]
    result = score(predictions, items, metrics)
    result.pop("items")
    print(
        f"SyllabusQA {args.split} ({args.decoding}): {result['n']} questions, search baseline, "
        f"retrieval {retrieval_s:.1f}s"
    )
    keys = [k for k in ("rouge_l_f1", "bertscore_f1") if k in result]
    print(f"{'group':<20} {'n':>5} " + " ".join(f"{k:>13}" for k in keys))
    print(f"{'overall':<20} {result['n']:>5} " + " ".join(f"{result[k]:>13.4f}" for k in keys))
    for group, counts in (("per_type", result["n_per_type"]), ("per_source", result["n_per_source"])):
        for name, n in counts.items():
            print(f"{name:<20} {n:>5} " + " ".join(f"{result[f'{k}_{group}'][name]:>13.4f}" for k in keys))
    print(json.dumps({"split": args.split, "system": "search", "decoding": args.decoding, **result}))


if __name__ == "__main__":
    main()
