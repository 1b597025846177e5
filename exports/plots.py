"""PNG plots for the dataset card: length histograms and the question-type mix per split.

matplotlib runs on the Agg backend (no display on servers or Celery workers). PNGs are written without
the ``Software`` metadata entry so that the bytes depend on the data only (re-exports stay identical).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from exports.records import QUESTION_TYPES, MCQRecord, QARecord, Record  # noqa: E402
from exports.statistics import count_tokens  # noqa: E402

logger = logging.getLogger(__name__)

_PNG_METADATA = {"Software": None}


def plot_lengths(
    by_split: Mapping[str, Sequence[Record]],
    path: Path,
    *,
    tokenize: Callable[[str], int] = count_tokens,
) -> Path:
    """Write histograms of question and answer lengths (tokens), one series per split.

    Args:
        by_split: split name -> records.
        path: PNG file to write.
        tokenize: token counter.

    Returns:
        ``path``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), dpi=100)
    try:
        for ax, label in zip(axes, ("question", "answer"), strict=False):
            for split, records in by_split.items():
                lengths = [
                    tokenize(
                        r.question
                        if label == "question"
                        else (r.answer if isinstance(r, QARecord) else r.correct_answer)
                    )
                    for r in records
                ]
                if lengths:
                    ax.hist(
                        lengths, bins=30, histtype="step", density=True, label=f"{split} (n={len(lengths)})"
                    )
            ax.set_xlabel(f"tokens per {label}")
            ax.set_ylabel("density")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png", metadata=_PNG_METADATA)
    finally:
        plt.close(fig)
    return path


def plot_types(by_split: Mapping[str, Sequence[Record]], path: Path) -> Path:
    """Write a grouped bar chart of question-type shares per split (MCQ: distractor counts).

    Returns:
        ``path``.
    """
    fig, ax = plt.subplots(figsize=(9, 3.4), dpi=100)
    try:
        splits = list(by_split)
        all_records = [r for records in by_split.values() for r in records]
        if any(isinstance(r, MCQRecord) for r in all_records):
            categories = sorted({len(r.distractors) for r in all_records if isinstance(r, MCQRecord)})
            labels = [f"{c} distractors" for c in categories]

            def key(r: Record) -> object:
                return len(r.distractors) if isinstance(r, MCQRecord) else None
        else:
            extra = sorted({r.question_type for r in all_records} - set(QUESTION_TYPES))
            categories = [t for t in QUESTION_TYPES if any(r.question_type == t for r in all_records)] + extra
            labels = list(categories)

            def key(r: Record) -> object:
                return r.question_type if isinstance(r, QARecord) else None

        width = 0.8 / max(1, len(splits))
        for i, split in enumerate(splits):
            records = by_split[split]
            total = len(records) or 1
            shares = [100 * sum(1 for r in records if key(r) == c) / total for c in categories]
            ax.bar([x + i * width for x in range(len(categories))], shares, width, label=split)
        ax.set_xticks([x + width * (len(splits) - 1) / 2 for x in range(len(categories))])
        ax.set_xticklabels(labels, rotation=20, fontsize=8)
        ax.set_ylabel("% of split")
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(path, format="png", metadata=_PNG_METADATA)
    finally:
        plt.close(fig)
    return path
