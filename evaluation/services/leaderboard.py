"""The leaderboard of a release: one row per done run, overall and stratified tables (plain dicts).

The page template only loops over what this returns, so the column choice (Fact-QA, LFQA and
entailment columns appear only when some run has them) is decided once, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from evaluation.models import BenchmarkRun
from evaluation.schema import QUESTION_TYPES
from exports.models import Release

#: Overall columns in display order: (metrics key, heading).
METRIC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("accuracy", "Accuracy"),
    ("accuracy_norm", "Accuracy (per-character likelihood)"),
    ("rouge_l_f1", "ROUGE-L F1"),
    ("bertscore_f1", "BERTScore F1"),
    ("fact_qa_p", "Fact-QA P"),
    ("fact_qa_r", "Fact-QA R"),
    ("fact_qa_f", "Fact-QA F1"),
    ("lfqa_coherence", "LFQA coherence"),
    ("lfqa_relevance", "LFQA relevance"),
    ("lfqa_factual_consistency", "LFQA factual consistency"),
    ("lfqa_accuracy", "LFQA accuracy"),
    ("entailment", "Entailment (judged correct)"),
    ("entailment_mark", "Entailment partial mark"),
)
STRATA: tuple[tuple[str, str], ...] = (("question_type", "question type"), ("answer_source", "answer source"))
SOURCE_ORDER: tuple[str, ...] = ("explicit", "implicit", "insufficient")
HUMAN = "human"


def done_runs(release: Release) -> list[BenchmarkRun]:
    """Done runs of a release with at least one item: systems by split and name, then "human" rows."""
    runs = list(
        release.benchmark_runs.filter(status=BenchmarkRun.Status.DONE, n_items__gt=0).order_by(
            "split", "system", "pk"
        )
    )
    return [r for r in runs if r.system != HUMAN] + [r for r in runs if r.system == HUMAN]


def present_columns(runs: Sequence[BenchmarkRun]) -> list[tuple[str, str]]:
    """The metric columns at least one run has a value for, in display order."""
    return [
        (key, label) for key, label in METRIC_COLUMNS if any(r.metrics.get(key) is not None for r in runs)
    ]


def _ordered_groups(runs: Sequence[BenchmarkRun], stratum: str) -> list[str]:
    seen = {group for r in runs for group in (r.stratified.get(stratum) or {})}
    order = QUESTION_TYPES if stratum == "question_type" else SOURCE_ORDER
    return [g for g in order if g in seen] + sorted(seen - set(order))


def leaderboard(release: Release) -> dict[str, Any]:
    """Tables of a release's leaderboard page.

    Returns:
        ``{"columns": [(key, label)], "rows": [{"run", "values": [..]}], "strata": [{"title", "metric",
        "groups": [..], "rows": [{"run", "values": [..]}]}]}``; a missing value is None.
    """
    runs = done_runs(release)
    columns = present_columns(runs)
    rows = [{"run": r, "values": [r.metrics.get(key) for key, _ in columns]} for r in runs]
    strata: list[dict[str, Any]] = []
    for stratum, title in STRATA:
        groups = _ordered_groups(runs, stratum)
        if not groups:
            continue
        for key, label in columns:
            table_rows = []
            for r in runs:
                by_group = r.stratified.get(stratum) or {}
                values: list[Optional[float]] = [(by_group.get(g) or {}).get(key) for g in groups]
                if any(v is not None for v in values):
                    table_rows.append({"run": r, "values": values})
            if table_rows:
                strata.append(
                    {"title": f"{label} by {title}", "metric": key, "groups": groups, "rows": table_rows}
                )
    return {"columns": columns, "rows": rows, "strata": strata}
