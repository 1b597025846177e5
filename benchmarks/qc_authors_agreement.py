"""Agreement of crowdqa's SyllabusQA QC with the authors' quality-control script on all released rows.

The authors' script (umass-ml4ed/SyllabusQA ``code/data_wrangling/quality_control_v2.py``) is not part of
crowdqa: pass its path. It prints one line per (row, check, column) it flags: ``check_length`` (question,
answer and reasoning steps under 3 words, yes/no and no-answer answers exempt) and ``check_profanity``
(profanity-check's ``predict`` per text column). This script runs it on the 5,078 rows of the three
published split CSVs (its own input, the pre-split file, is not published), read with pandas as its
authors read them, runs :func:`check_pairs` on the same files read as the importer reads them (the two
readings give the same 5,078 rows), maps crowdqa's ``too_short`` and ``profanity`` issues to (row, check,
column), and prints both sets' overlap.

    .venv/bin/python benchmarks/qc_authors_agreement.py --authors-script PATH/TO/quality_control_v2.py \\
        [--profanity-threshold 0.8]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import logging
import re
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.importers.syllabusqa_csv import read_qa_rows, split_dir  # noqa: E402
from annotation.qc.syllabusqa import SyllabusQAOptions, SyllabusQAPair, check_pairs  # noqa: E402
from annotation.question_types import SPLITS  # noqa: E402
from config.shared_data import dataset_dir  # noqa: E402

_LINE = re.compile(r"^Check ID: (\S+) with failed check: (check_\w+) for (\w+): ", re.MULTILINE)
_CHECKS = {"too_short": "check_length", "profanity": "check_profanity"}


def column_of(field: str) -> str:
    """crowdqa's form field -> the CSV column (``span-0`` -> ``answer_span_1``, ``step-2`` -> ...)."""
    if field.startswith("span-"):
        return f"answer_span_{int(field[5:]) + 1}"
    if field.startswith("step-"):
        return f"reasoning_step_{int(field[5:]) + 1}"
    return field


def authors_flags(script: Path, frame: pd.DataFrame) -> set[tuple[str, str, str]]:
    """Run the authors' ``quality_control_check`` and parse what it prints."""
    spec = importlib.util.spec_from_file_location("authors_quality_control", script)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {script}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        module.quality_control_check(frame, argparse.Namespace(length_thresh=3))
    return {(m.group(1), m.group(2), m.group(3)) for m in _LINE.finditer(out.getvalue())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--authors-script", type=Path, required=True, help="quality_control_v2.py")
    parser.add_argument("--profanity-threshold", type=float, default=SyllabusQAOptions().profanity_threshold)
    args = parser.parse_args()
    root = dataset_dir("syllabusqa")
    if root is None:
        raise SystemExit("SyllabusQA not found (set CROWDQA_SHARED_DATA)")
    logging.getLogger("filters").setLevel(logging.ERROR)
    folder = split_dir(root)
    frame = pd.concat([pd.read_csv(folder / f"{s}.csv", encoding="utf-8") for s in SPLITS], ignore_index=True)
    frame = frame.dropna(axis=0, how="all")
    theirs = authors_flags(args.authors_script, frame)

    rows = read_qa_rows(root)
    pairs = [SyllabusQAPair.from_qa_row(r) for r in rows]
    options = SyllabusQAOptions(profanity_threshold=args.profanity_threshold)
    ours = {
        (result.id, _CHECKS[i.code], column_of(i.field))
        for result in check_pairs(pairs, {}, options)
        for i in result.issues
        if i.code in _CHECKS
    }
    summary: dict[str, object] = {"rows": len(rows), "profanity_threshold": args.profanity_threshold}
    print(f"{len(rows)} rows; profanity threshold {args.profanity_threshold}")
    print(
        f"{'check':<16} {'theirs':>7} {'ours':>7} {'both':>7} {'theirs only':>12} {'ours only':>10} rows"
        " (both)"
    )
    for check in ("check_length", "check_profanity"):
        a = {f for f in theirs if f[1] == check}
        b = {f for f in ours if f[1] == check}
        rows_a, rows_b = {f[0] for f in a}, {f[0] for f in b}
        print(
            f"{check:<16} {len(a):>7} {len(b):>7} {len(a & b):>7} {len(a - b):>12} {len(b - a):>10} "
            f"{len(rows_a & rows_b)} of {len(rows_a | rows_b)}"
        )
        for flag in sorted(a ^ b)[:15]:
            side = "theirs only" if flag in a else "ours only"
            value = frame.loc[frame["id"] == flag[0], flag[2]].iloc[0]
            print(f"  {side}: {flag[0]} {flag[2]}: {str(value)[:70]!r}")
        summary[check] = {
            "theirs": len(a),
            "ours": len(b),
            "both": len(a & b),
            "theirs_only": len(a - b),
            "ours_only": len(b - a),
            "rows_theirs": len(rows_a),
            "rows_ours": len(rows_b),
            "by_column_theirs": dict(Counter(f[2] for f in a)),
        }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
