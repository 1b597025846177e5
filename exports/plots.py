"""PNG plots for the dataset card: length histograms and the question-type mix per split.

matplotlib runs on the Agg backend (no display on servers or Celery workers). PNGs are written without
the ``Software`` metadata entry so that the bytes depend on the data only (re-exports stay identical).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from exports.records import QUESTION_TYPES  # noqa: E402
from exports.statistics import SplitStatistics  # noqa: E402

logger = logging.getLogger(__name__)

_PNG_METADATA = {"Software": None}


def plot_lengths(by_split: Mapping[str, SplitStatistics], path: Path) -> Path:
    """Write histograms of question and answer lengths (tokens), one series per split.

    Args:
        by_split: split name -> its statistics (length histograms, see
            :class:`~exports.statistics.SplitStatistics`).
        path: PNG file to write.

    Returns:
        ``path``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), dpi=100)
    try:
        for ax, label in zip(axes, ("question", "answer"), strict=False):
            for split, stats in by_split.items():
                counts = stats.question_tokens if label == "question" else stats.answer_tokens
                lengths = sorted(counts)
                n = sum(counts.values())
                if n:
                    # Each distinct length once, weighted by how often it occurs: the same bins, counts
                    # and densities as the histogram of every value.
                    ax.hist(
                        lengths,
                        bins=30,
                        weights=[counts[v] for v in lengths],
                        histtype="step",
                        density=True,
                        label=f"{split} (n={n})",
                    )
            ax.set_xlabel(f"tokens per {label}")
            ax.set_ylabel("density")
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png", metadata=_PNG_METADATA)
    finally:
        plt.close(fig)
    return path


def plot_types(by_split: Mapping[str, SplitStatistics], path: Path) -> Path:
    """Write a grouped bar chart of question-type shares per split (MCQ: distractor counts).

    Returns:
        ``path``.
    """
    fig, ax = plt.subplots(figsize=(9, 3.4), dpi=100)
    try:
        splits = list(by_split)
        everything = SplitStatistics.merged(by_split.values())
        counts_of: dict[str, Mapping[object, int]]
        if everything.mcq:
            categories: list[object] = sorted(everything.distractor_counts)
            labels = [f"{c} distractors" for c in categories]
            counts_of = {s: by_split[s].distractor_counts for s in splits}
        else:
            extra = sorted(set(everything.question_types) - set(QUESTION_TYPES))
            categories = [t for t in QUESTION_TYPES if everything.question_types.get(t)] + extra
            labels = [str(c) for c in categories]
            counts_of = {s: by_split[s].question_types for s in splits}

        width = 0.8 / max(1, len(splits))
        for i, split in enumerate(splits):
            total = by_split[split].records or 1
            shares = [100 * counts_of[split].get(c, 0) / total for c in categories]
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
