"""Tests for exports/card.py and exports/plots.py."""

from __future__ import annotations

from exports.card import CardInputs, render_card, write_card
from exports.splits import SplitItem, group_split
from exports.statistics import DocumentInfo


def _by_split(records, seed=0):
    assignment = group_split([SplitItem(r.id, r.document_id, r.stratum) for r in records], seed=seed)
    by_split = {s: [r for r in records if assignment.items[r.id] == s] for s in ("train", "val", "test")}
    return by_split, assignment.to_dict()


def test_render_card__real_syllabusqa_counts_table6_and_optional_crowd_facts(
    syllabusqa_records, syllabus_documents
):
    by_split, summary = _by_split(syllabusqa_records)
    inputs = CardInputs(
        license="CC BY-NC-SA 4.0",
        citation="@inproceedings{fernandez2024syllabusqa}",
        documents=syllabus_documents,
        median_seconds=2520,
        effective_hourly_pay_usd=14.5,
        qc_rejection_rates={"pii_request": 0.012},
        agreement={"fact_qa_precision": 0.83},
    )
    text = render_card(
        name="syllabusqa-crowd",
        version="2",
        by_split=by_split,
        split_summary=summary,
        inputs=inputs,
        version_counts={"syllabusqa": {s: len(r) for s, r in by_split.items()}},
        excluded={"syllabusqa": 0},
    )
    assert f"| train | {len(by_split['train']):,} | {summary['document_counts']['train']} |" in text
    explicit = sum(
        1 for r in syllabusqa_records if r.question_type in ("yes/no", "single factual", "multi factual")
    )
    assert explicit == 2177  # the paper's explicit count
    assert "| explicit | " in text and f" {explicit:,} | 42.9 |" in text
    assert "| pages / syllabus |" in text and "| tokens / syllabus |" in text
    assert "- median time per HIT: 42.0 min" in text
    assert "- effective pay: $14.50 / hour" in text
    assert "| pii_request | 1.2% |" in text and "| fact_qa_precision | 0.830 |" in text
    assert "CC BY-NC-SA 4.0" in text and "fernandez2024syllabusqa" in text
    assert "## Collection" in text


def test_render_card__no_crowd_section_without_facts(make_qa):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 6}") for i in range(30)]
    by_split, summary = _by_split(records)
    text = render_card(
        name="r",
        version="1",
        by_split=by_split,
        split_summary=summary,
        inputs=CardInputs(),
        version_counts={},
        excluded={},
    )
    assert "## Collection" not in text
    assert "| pages / syllabus | – | – | – |" in text
    assert "unstated" in text


def test_write_card__writes_pngs_and_counts_worker_pseudonyms(make_qa, tmp_path):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 6}", worker=f"w_{i % 3:016x}") for i in range(30)]
    by_split, summary = _by_split(records)
    files = write_card(
        tmp_path,
        name="r",
        version="1",
        by_split=by_split,
        split_summary=summary,
        inputs=CardInputs(documents={"s0": DocumentInfo(pages=3)}),
        version_counts={},
        excluded={},
    )
    assert [f.name for f in files] == ["card.md", "lengths.png", "types.png"]
    for png in files[1:]:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = files[0].read_text(encoding="utf-8")
    assert "- workers: 3" in text
    assert "![lengths](plots/lengths.png)" in text


def test_render_card__agreement_table_with_its_source_note(make_qa):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 6}") for i in range(30)]
    by_split, summary = _by_split(records)
    note = "Agreement of expert answers with the crowd's on 50 test items of release r 0.9 (benchmark run 4)."
    text = render_card(
        name="r",
        version="1",
        by_split=by_split,
        split_summary=summary,
        inputs=CardInputs(agreement={"rouge_l_f1": 0.41}, agreement_note=note),
        version_counts={},
        excluded={},
    )
    assert "| rouge_l_f1 | 0.410 |" in text
    assert text.index(note) > text.index("| agreement | value |")
