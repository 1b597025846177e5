"""Heuristic QC over all real SyllabusQA pairs: flag rates, span matching and why spans still miss.

Usage:
    .venv/bin/python benchmarks/qc_syllabusqa.py /work/shared/data/syllabusqa

Span statuses: exact (byte-for-byte in the UTF-8 text), normalized (after case/whitespace folding),
repaired (within 2 edits after folding, replaced by document text), not_found. Each miss is put in
the first category that explains it (see ``categorise``).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from rapidfuzz import fuzz

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation.importers.syllabusqa_csv import read_qa_rows  # noqa: E402
from annotation.qc.syllabusqa import SyllabusQAPair, check_pairs  # noqa: E402
from annotation.spans import NOT_FOUND, normalize_document, normalize_text  # noqa: E402

_ALNUM = re.compile(r"[^0-9a-z]+")


def squash(text: str) -> str:
    """Letters and digits only, lowercased."""
    return _ALNUM.sub("", text.lower())


def categorise(span: str, doc_text: str, doc_norm: str, doc_squashed: str) -> str:
    """Name the first explanation of why a span is not in the document."""
    norm = normalize_text(span)
    if normalize_text(html.unescape(span)) in doc_norm:
        return "html_entities (&lt; &amp; in the span)"
    if squash(span) and squash(span) in doc_squashed:
        return "punctuation_or_symbols (same letters and digits; bullets, quotes, dashes, ligatures differ)"
    pieces = [p for p in re.split(r"\n+|\t+|\s{3,}", span) if len(p.strip()) > 3]
    if len(pieces) > 1 and all(normalize_text(p) in doc_norm for p in pieces):
        return "layout (each line/cell is in the text, but not contiguously: tables, columns)"
    score = fuzz.partial_ratio(norm, doc_norm) if norm else 0.0
    if score >= 90:
        return "small_edits (>2 edits: typos, edited words, partial copy; partial_ratio >= 90)"
    if score >= 70:
        return "paraphrase (worker rewrote the text; partial_ratio 70-90)"
    return "not_from_text (not in the extracted text at all, e.g. from the PDF image or invented; < 70)"


def main() -> None:
    """Run QC over train/val/test and print flag rates, span statistics and a JSON summary line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="SyllabusQA folder (data/dataset_split, syllabi/...)")
    args = parser.parse_args()
    text_dir = args.root / "syllabi" / "syllabi_redacted" / "text_utf8"
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(text_dir.glob("*.txt"))}
    pairs = [SyllabusQAPair.from_qa_row(row) for row in read_qa_rows(args.root)]
    start = time.perf_counter()
    results = check_pairs(pairs, {name: normalize_document(t) for name, t in texts.items()})
    elapsed = time.perf_counter() - start
    flags = Counter(f for r in results for f in r.flags)
    print(f"{len(pairs)} QA pairs over {len(texts)} syllabi, QC in {elapsed:.1f} s\n")
    print("| flag | pairs | rate |")
    print("| --- | ---: | ---: |")
    for code in (
        "pii_request", "profanity", "span_not_in_document", "span_count", "reasoning_step_count",
        "yes_no_answer_not_single_word", "adversarial_answer", "duplicate_question", "too_short",
        "annotator_cap_exceeded",
    ):  # fmt: skip
        print(f"| {code} | {flags[code]} | {flags[code] / len(pairs):.2%} |")
    statuses = Counter(s.status for r in results for s in r.spans)
    total = sum(statuses.values())
    print(f"\n{total} answer spans:")
    for status in ("exact", "normalized", "repaired", "not_found"):
        print(f"  {status}: {statuses[status]} ({statuses[status] / total:.1%})")
    distances = Counter(s.distance for r in results for s in r.spans if s.status == "repaired")
    print(f"  repaired by edit distance: {dict(sorted(distances.items()))}")
    squashed = {name: squash(t) for name, t in texts.items()}
    normed = {name: normalize_text(t) for name, t in texts.items()}
    categories: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for pair, result in zip(pairs, results, strict=True):
        for span in result.spans:
            if span.status == NOT_FOUND:
                name = pair.syllabus_name
                category = categorise(span.original, texts[name], normed[name], squashed[name])
                categories[category] += 1
                examples.setdefault(category, span.original[:90].replace("\n", " | "))
    missing = statuses["not_found"]
    print(f"\nremaining mismatches ({missing}):")
    for category, n in categories.most_common():
        print(f"  {n:5d} ({n / missing:.0%}) {category}\n        e.g. {examples[category]!r}")
    for code in ("pii_request", "duplicate_question"):
        shown = [p.question.strip() for p, r in zip(pairs, results, strict=True) if code in r.flags][:5]
        print(f"\n{code} examples: {shown}")
    summary = {"pairs": len(pairs), "spans": total, **{k: statuses[k] for k in statuses}}
    summary["flags"] = dict(flags)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
