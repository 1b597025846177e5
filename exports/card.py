"""The dataset card (``card.md``): what a release holds, how it was collected, and how to cite it.

Sections follow SyllabusQA's reporting: counts per split, Table 3 length statistics per split, the
Table 6 question-type and answer-source breakdown, crowd-work facts (workers, median time, effective
pay, QC rejection rates, agreement) when the caller knows them, licence, citation and plots.
The card carries no timestamp (the manifest does), so re-exports give the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from annotation import question_types as qt
from exports.records import Record
from exports.statistics import DocumentInfo, SplitStatistics, Summary, count_tokens

logger = logging.getLogger(__name__)

PLOT_LENGTHS = "plots/lengths.png"
PLOT_TYPES = "plots/types.png"


@dataclass(frozen=True)
class CardInputs:
    """Optional facts for the card that the records cannot tell.

    Attributes:
        title: what the release was built from (e.g. the corpus name), named under the heading; the
            heading itself is always the release's name and version.
        description: a paragraph on what the dataset is for.
        license: licence name (e.g. ``CC BY-NC-SA 4.0``); ``unstated`` when unknown.
        citation: BibTeX or a plain reference.
        documents: document id -> pages / tokens, for the per-document rows of Table 3.
        workers: number of crowd workers; counted from record pseudonyms when None.
        median_seconds: median working time per HIT in seconds.
        effective_hourly_pay_usd: pay per hour of median working time.
        qc_rejection_rates: QC flag code (or "overall") -> share of QA pairs rejected (0..1).
        agreement: metric name -> value (e.g. ``{"fact_qa_precision": 0.83}``).
        agreement_note: where the agreement figures come from (expert run, release, items).
        excluded_note: free text on what was left out of the release and why.
        pay_by_kind: per HIT kind, its decided submissions, hours worked, pay and pay per hour of
            active time (:func:`exports.work_costs.pay_by_kind`).
        cost_by_question_type: worker pay per released pair, by question type
            (:func:`exports.work_costs.cost_by_question_type`).
        aggregation: how repeated stage-2 validations were combined (``method``, ``validated``,
            ``left_out``, ``labels``, ``alpha_per_batch``: batch id -> Krippendorff's alpha or None);
            empty when no item was validated.
    """

    title: Optional[str] = None
    description: Optional[str] = None
    license: str = "unstated"
    citation: Optional[str] = None
    documents: Mapping[str, DocumentInfo] = field(default_factory=dict)
    workers: Optional[int] = None
    median_seconds: Optional[float] = None
    effective_hourly_pay_usd: Optional[float] = None
    qc_rejection_rates: Mapping[str, float] = field(default_factory=dict)
    agreement: Mapping[str, float] = field(default_factory=dict)
    agreement_note: Optional[str] = None
    excluded_note: Optional[str] = None
    aggregation: Mapping[str, Any] = field(default_factory=dict)
    pay_by_kind: Sequence[Mapping[str, Any]] = ()
    cost_by_question_type: Sequence[Mapping[str, Any]] = ()


def _aggregation_section(info: Mapping[str, Any]) -> list[str]:
    """The card's account of how repeated validations decided which questions are in the release."""
    lines = [
        "## Validation",
        "",
        f"{_fmt(info.get('validated'))} questions were validated in stage 2 ({_fmt(info.get('labels'))} "
        f"judgements). Each question's verdict is the aggregate of its validators' judgements by "
        f"`{info.get('method')}` (crowd-kit), not the last validator's; {_fmt(info.get('left_out'))} "
        "questions whose aggregated verdict was `reject` are left out.",
        "",
        "| batch | Krippendorff's alpha |",
        "|---|---:|",
    ]
    for batch, alpha in sorted(info.get("alpha_per_batch", {}).items(), key=lambda kv: str(kv[0])):
        lines.append(f"| {batch} | {'undefined' if alpha is None else f'{alpha:.3f}'} |")
    return lines + [""]


def _model_loop_section(everything: SplitStatistics) -> list[str]:
    """The card's per-type model-fooled rates of the pairs checked by the model in the loop (or nothing)."""
    checked, fooled = everything.model_checked, everything.model_fooled
    if not checked:
        return []
    setups = ", ".join(f"`{setup}` ({n:,})" for setup, n in sorted(everything.model_setups.items()))
    lines = [
        "## Model in the loop",
        "",
        f"{sum(checked.values()):,} of {everything.records - everything.mcq:,} QA pairs were answered by a "
        f"model while they were written and judged against the worker's answer ({setups}); the "
        "`model_*` fields of the JSONL and Parquet files hold each pair's check. \"Fooled\": the model's "
        "answer did not match the worker's; for no-answer questions, the model answered although the "
        "syllabus does not. A high rate marks questions a model does not already answer.",
    ]
    validated, confirmed = everything.model_validated, everything.model_confirmed
    if validated:
        lines[-1] += (
            ' The validated rate counts only the "fooled" verdicts a second worker confirmed (the '
            "model's answer was wrong and the worker's right), over all checked pairs: Dynabench's "
            "validated model error rate; `model_validation` holds each pair's outcome."
        )
        lines += [
            "",
            "| question type | checked | fooled | fooled rate | validated | confirmed | validated rate |",
        ]
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
    else:
        lines += ["", "| question type | checked | fooled | fooled rate |", "|---|---:|---:|---:|"]

    def row(name: str, n: int, k: int, v: int, c: int) -> str:
        cells = f"| {name} | {n:,} | {k:,} | {k / n:.3f} |"
        if validated:
            cells += f" {v:,} | {c:,} | {c / n:.3f} |" if v else f" {v:,} | {c:,} | – |"
        return cells

    order = list(qt.SYLLABUS_TYPES) + sorted(set(checked) - set(qt.SYLLABUS_TYPES))
    for name in (n for n in order if checked.get(n)):
        lines.append(row(name, checked[name], fooled[name], validated[name], confirmed[name]))
    lines.append(
        row(
            "all",
            sum(checked.values()),
            sum(fooled.values()),
            sum(validated.values()),
            sum(confirmed.values()),
        )
    )
    return lines + [""]


def _options_only_section(everything: SplitStatistics) -> list[str]:
    """The card's SciQ artifact check: items a model answered from the options alone (or nothing)."""
    checked, answered = everything.options_only_checked, everything.options_only_answered
    if not checked:
        return []
    models = ", ".join(f"`{m}` ({n:,})" for m, n in sorted(everything.options_only_models.items()))
    return [
        "## Answerable from the options alone",
        "",
        f"{checked:,} of {everything.mcq:,} multiple-choice items were given, after their validation, to a "
        f"language model that scores the four options after the question without the passage ({models}). "
        f"It picked the correct answer (by total and per-character log-likelihood) for {answered:,} of "
        f"them ({answered / checked:.3f}); those were flagged for review, since poor distractors can give "
        "the answer away. `options_only_answered` in the JSONL and Parquet files marks them.",
        "",
    ]


def _fmt(value: Optional[float]) -> str:
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def _length_table(stats: Mapping[str, Mapping[str, Summary]], rows: Sequence[tuple[str, str]]) -> list[str]:
    splits = list(stats)
    head = "| statistic | " + " | ".join(f"{s} mean | {s} min | {s} max" for s in splits) + " |"
    rule = "|---|" + "---:|" * (3 * len(splits))
    lines = [head, rule]
    for key, label in rows:
        cells = []
        for split in splits:
            summary = stats[split].get(key)
            cells += [_fmt(summary.mean), _fmt(summary.min), _fmt(summary.max)] if summary else ["–"] * 3
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _breakdown_table(by_split: Mapping[str, SplitStatistics], section: str, label: str) -> list[str]:
    columns = {**by_split, "all": SplitStatistics.merged(by_split.values())}
    tables = {name: stats.breakdown()[section] for name, stats in columns.items()}
    names = list(tables["all"])
    lines = [
        f"| {label} | " + " | ".join(f"{c} count | {c} %" for c in columns) + " |",
        "|---|" + "---:|" * (2 * len(columns)),
    ]
    for name in names:
        cells = []
        for column in columns:
            entry = tables[column].get(name, {"count": 0, "percent": None})
            cells += [f"{entry['count']:,}", _fmt(entry["percent"])]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def split_statistics(
    by_split: Mapping[str, Sequence[Record]], tokenize: Callable[[str], int] = count_tokens
) -> dict[str, SplitStatistics]:
    """The card's statistics of each split of records held in memory."""
    return {split: SplitStatistics.of(records, tokenize) for split, records in by_split.items()}


def _suggestion_section(summary: Mapping[str, Any]) -> list[str]:
    """The card's section on the distractor suggestions shown to validators and the ones they kept."""
    versions = ", ".join(f"`{v}`" for v in summary.get("model_versions") or []) or "unnamed"
    lines = [
        "## Distractor suggestions",
        "",
        "`suggestions_{train,val,test}.jsonl` log, for each of "
        f"{summary['questions']:,} questions, the model suggestions shown to validators (text, score, "
        "rank, model version), whether a validator picked each (`picked`, `picked_by`), and the "
        "released distractors marked `model` (a kept suggestion) or `worker` (written by the "
        f"validator). Suggesters: {versions}. These files are not part of the multiple-choice schema.",
        "",
    ]
    if summary.get("shown"):
        lines += [
            f"Validators kept {summary['picked']:,} of {summary['shown']:,} suggestions shown "
            f"({100 * summary['pick_rate']:.1f}%) on {summary['validated']:,} validated questions.",
            "",
            "| rank | shown | picked | picked % |",
            "|---:|---:|---:|---:|",
        ]
        for rank, entry in summary["by_rank"].items():
            lines.append(
                f"| {rank} | {entry['shown']:,} | {entry['picked']:,} | {100 * entry['pick_rate']:.1f}% |"
            )
        lines.append("")
    origins = summary.get("distractors") or {}
    if origins:
        lines += ["Released distractors by origin: " + ", ".join(f"{k} {v:,}" for k, v in origins.items())]
        lines.append("")
    return lines


def _split_section(
    split_summary: Mapping[str, Any],
    stats_by_split: Mapping[str, SplitStatistics],
    unit: str,
    doc_label: str,
) -> list[str]:
    """How the release was split, the documents a source's own split shares, and the split sizes."""
    lines = ["## Splits", ""]
    if split_summary.get("mode") == "sciq":
        sizes = split_summary.get("target_sizes") or {}
        lines.append(
            f"Fixed-size split (SciQ): {sizes.get('val')} validation and {sizes.get('test')} test "
            f"{unit}, the rest in train; seed {split_summary.get('seed')}."
        )
    else:
        ratios = split_summary.get("target_ratios") or {}
        lines.append(
            f"Split by source document (no {doc_label} appears in two splits), targeting "
            + "/".join(f"{v:g}" for v in ratios.values())
            + f" of {unit}; seed {split_summary.get('seed')}."
        )
    if split_summary.get("kept_items"):
        lines.append(f"{split_summary['kept_items']:,} items kept the split of the previous release.")
    shared = split_summary.get("shared_documents") or {}
    if shared:
        lines += [
            "",
            f"The source dataset's own split puts {len(shared):,} {doc_label}(s) in more than one split; "
            "each of their items keeps its original split (items per split):",
            "",
        ]
        lines += [
            f"- `{doc}`: " + ", ".join(f"{split} {n:,}" for split, n in counts.items())
            for doc, counts in sorted(shared.items())
        ]
    lines += ["", f"| split | {unit} | documents | share |", "|---|---:|---:|---:|"]
    for split, stats in stats_by_split.items():
        share = split_summary.get("achieved_ratios", {}).get(split)
        docs = split_summary.get("document_counts", {}).get(split)
        percent = _fmt(None if share is None else 100 * share)
        lines.append(f"| {split} | {stats.records:,} | {_fmt(docs)} | {percent}% |")
    lines.append("")
    return lines


def _version_section(
    version_counts: Mapping[str, Mapping[str, int]],
    excluded: Mapping[str, int],
    splits: Sequence[str],
) -> list[str]:
    """Rows per dataset version and split, when there is more than one version or items were left out."""
    if not (len(version_counts) > 1 or any(excluded.values())):
        return []
    lines = ["Rows per dataset version:", "", "| version | " + " | ".join(splits) + " | left out |"]
    lines.append("|---|" + "---:|" * (len(splits) + 1))
    for vname, counts in version_counts.items():
        cells = [f"{counts.get(s, 0):,}" for s in splits]
        lines.append(f"| {vname} | " + " | ".join(cells) + f" | {excluded.get(vname, 0):,} |")
    lines.append("")
    if excluded.get("direct_answer"):
        lines += ["The direct-answer version leaves out questions whose passage cannot be released.", ""]
    return lines


def _statistics_section(
    stats_by_split: Mapping[str, SplitStatistics], inputs: CardInputs, is_mcq: bool, doc_label: str
) -> list[str]:
    """Length statistics per split; for QA pairs, question types and answer sources too."""
    stats = {s: st.lengths(inputs.documents) for s, st in stats_by_split.items()}
    rows = [
        ("pages_per_document", f"pages / {doc_label}"),
        ("tokens_per_document", f"tokens / {doc_label}"),
        ("tokens_per_question", "tokens / question"),
        ("tokens_per_answer", "tokens / answer"),
    ]
    if is_mcq:
        rows = [r for r in rows if r[0] not in ("pages_per_document", "tokens_per_document")]
        rows.append(("tokens_per_passage", "tokens / passage"))
    lines = ["## Statistics", "", "Tokens are word and punctuation tokens (regex `\\w+|[^\\w\\s]`).", ""]
    lines += _length_table(stats, rows) + [""]
    if not is_mcq:
        lines += ["## Question types and answer sources", ""]
        lines += _breakdown_table(stats_by_split, "question_types", "question type") + [""]
        lines += [
            "Answer source: explicit (yes/no, single factual, multi factual), implicit (single reasoning, "
            "multi reasoning, summarization), insufficient information (no answer).",
            "",
        ]
        lines += _breakdown_table(stats_by_split, "answer_sources", "answer source") + [""]
    return lines


def _money(cents: Optional[float], currency: str) -> str:
    return "–" if cents is None else f"{cents / 100:,.2f} {currency}"


def _pay_tables(inputs: CardInputs) -> list[str]:
    """Pay per hour of active time per HIT kind, and worker pay per released pair per question type."""
    lines: list[str] = []
    if inputs.pay_by_kind:
        lines += [
            "",
            "| HIT kind | submissions | hours worked | active time measured | paid | pay per hour |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for row in inputs.pay_by_kind:
            share = row.get("active_share")
            measured = "–" if share is None else f"{100 * share:.0f}%"
            lines.append(
                f"| {row['kind']} | {_fmt(row['submissions'])} | {row['hours']:.2f} | {measured} | "
                f"{_money(row['paid_cents'], row['currency'])} | "
                f"{_money(row.get('hourly_cents'), row['currency'])} |"
            )
        lines += [
            "",
            "Hours are the time each HIT page was visible and in use (accept-to-submit where the page "
            "measured none); pay is the rewards and bonuses of approved and rejected work, platform fees "
            "left out.",
        ]
    if inputs.cost_by_question_type:
        lines += ["", "| question type | pairs | worker pay per pair |", "|---|---:|---:|"]
        lines += [
            f"| {row['question_type']} | {_fmt(row['pairs'])} | "
            f"{_money(row['cost_cents_per_pair'], row['currency'])} |"
            for row in inputs.cost_by_question_type
        ]
        lines += [
            "",
            "A pair's pay is its share of the submission that wrote it, plus the pay of each of its "
            "validations.",
        ]
    return lines


def _collection_section(inputs: CardInputs, everything: SplitStatistics) -> list[str]:
    """The crowd work behind the release: workers, time, pay, QC rejections and agreement."""
    workers = inputs.workers if inputs.workers is not None else everything.distinct_workers()
    crowd = [
        ("workers", _fmt(workers) if workers is not None else None),
        ("median time per HIT", f"{inputs.median_seconds / 60:.1f} min" if inputs.median_seconds else None),
        (
            "effective pay",
            f"${inputs.effective_hourly_pay_usd:.2f} / hour" if inputs.effective_hourly_pay_usd else None,
        ),
    ]
    crowd = [(k, v) for k, v in crowd if v is not None]
    if not (crowd or inputs.qc_rejection_rates or inputs.agreement or inputs.pay_by_kind):
        return []
    lines = ["## Collection", ""]
    lines += [f"- {k}: {v}" for k, v in crowd]
    lines += _pay_tables(inputs)
    if inputs.qc_rejection_rates:
        lines += ["", "| QC rule | rejected |", "|---|---:|"]
        lines += [f"| {k} | {100 * v:.1f}% |" for k, v in sorted(inputs.qc_rejection_rates.items())]
    if inputs.agreement:
        lines += ["", "| agreement | value |", "|---|---:|"]
        lines += [f"| {k} | {v:.3f} |" for k, v in sorted(inputs.agreement.items())]
        if inputs.agreement_note:
            lines += ["", inputs.agreement_note.strip()]
    lines.append("")
    return lines


def _closing_sections(name: str, version: str, inputs: CardInputs, plots: Sequence[str]) -> list[str]:
    """The plots, the privacy promise, the licence and the citation."""
    lines: list[str] = []
    if plots:
        lines += ["## Plots", ""]
        lines += [f"![{Path(p).stem}]({p})" for p in plots] + [""]
    lines += [
        "## Privacy",
        "",
        "Worker ids never appear; a `worker` column holds salted pseudonyms only.",
        "",
        "In the CSV files, a cell that a spreadsheet would run as a formula (one starting with `=`, `+`, "
        "`@`, or `-` followed by anything but a space or a dash, numbers aside) starts with a `'` that is "
        "not part of the text; JSONL and Parquet hold the text as written.",
        "",
    ]
    lines += ["## Licence", "", inputs.license, ""]
    lines += ["## Citation", "", "```", (inputs.citation or f"{name}, version {version}").strip(), "```", ""]
    return lines


def render_card(
    *,
    name: str,
    version: str,
    by_split: Optional[Mapping[str, Sequence[Record]]] = None,
    split_summary: Mapping[str, Any],
    inputs: CardInputs,
    version_counts: Mapping[str, Mapping[str, int]],
    excluded: Mapping[str, int],
    tokenize: Callable[[str], int] = count_tokens,
    plots: Sequence[str] = (PLOT_LENGTHS, PLOT_TYPES),
    suggestions: Optional[Mapping[str, Any]] = None,
    extra_sections: Sequence[str] = (),
    split_stats: Optional[Mapping[str, SplitStatistics]] = None,
) -> str:
    """Return the Markdown of the dataset card.

    Args:
        name: release name.
        version: release version.
        by_split: split -> records; or
        split_stats: split -> the statistics gathered while the records were written (a streamed
            release; ``tokenize`` was applied then).
        split_summary: :meth:`~exports.splits.SplitAssignment.to_dict` output.
        inputs: optional facts (licence, citation, crowd work, documents).
        version_counts: dataset version -> split -> rows written.
        excluded: dataset version -> items left out (direct-answer items without a passage).
        tokenize: token counter used for the length statistics.
        plots: PNG paths (relative to the release) to embed.
        suggestions: :func:`~exports.suggestions.summarize_suggestions` output when the release
            carries ``suggestions_{split}.jsonl`` files; None otherwise.
        extra_sections: Markdown lines placed before the plots (e.g. which files serve the original
            datasets' loaders).
    """
    stats_by_split = split_stats if split_stats is not None else split_statistics(by_split or {}, tokenize)
    everything = SplitStatistics.merged(stats_by_split.values())
    is_mcq = everything.mcq > 0
    unit = "questions" if is_mcq else "QA pairs"
    doc_label = "passage" if is_mcq else "syllabus"
    lines = [f"# {name} {version}", ""]
    if inputs.title and inputs.title != name:
        lines += [f"Built from {inputs.title}.", ""]
    if inputs.description:
        lines += [inputs.description.strip(), ""]
    lines += _split_section(split_summary, stats_by_split, unit, doc_label)
    lines += _version_section(version_counts, excluded, list(stats_by_split))
    lines += _statistics_section(stats_by_split, inputs, is_mcq, doc_label)
    lines += _collection_section(inputs, everything)
    if inputs.excluded_note:
        lines += [inputs.excluded_note.strip(), ""]
    if inputs.aggregation:
        lines += _aggregation_section(inputs.aggregation)
    lines += _model_loop_section(everything)
    lines += _options_only_section(everything)
    if suggestions:
        lines += _suggestion_section(suggestions)
    lines += list(extra_sections)
    lines += _closing_sections(name, version, inputs, plots)
    return "\n".join(lines)


def write_card(
    root: Path,
    *,
    name: str,
    version: str,
    by_split: Optional[Mapping[str, Sequence[Record]]] = None,
    split_summary: Mapping[str, Any],
    inputs: CardInputs,
    version_counts: Mapping[str, Mapping[str, int]],
    excluded: Mapping[str, int],
    tokenize: Callable[[str], int] = count_tokens,
    suggestions: Optional[Mapping[str, Any]] = None,
    extra_sections: Sequence[str] = (),
    split_stats: Optional[Mapping[str, SplitStatistics]] = None,
) -> list[Path]:
    """Write ``card.md`` and its plots under ``root``; return the files written.

    Give the records (``by_split``) or the statistics gathered while writing them (``split_stats``).
    """
    # matplotlib (and numpy) only where a card is written: web workers import this module, never plot.
    from exports.plots import plot_lengths, plot_types

    stats = split_stats if split_stats is not None else split_statistics(by_split or {}, tokenize)
    (root / "plots").mkdir(parents=True, exist_ok=True)
    plot_lengths(stats, root / PLOT_LENGTHS)
    plot_types(stats, root / PLOT_TYPES)
    text = render_card(
        name=name,
        version=version,
        split_stats=stats,
        split_summary=split_summary,
        inputs=inputs,
        version_counts=version_counts,
        excluded=excluded,
        tokenize=tokenize,
        suggestions=suggestions,
        extra_sections=extra_sections,
    )
    card = root / "card.md"
    card.write_text(text, encoding="utf-8")
    return [card, root / PLOT_LENGTHS, root / PLOT_TYPES]
