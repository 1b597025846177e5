"""Tests for exports/release.py: real SyllabusQA and SciQ releases built end to end."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
import pytest

from exports.card import CardInputs
from exports.privacy import PrivacyError
from exports.records import QARecord
from exports.release import build_release
from exports.release_files import (
    ReleaseError,
    ReleaseIntegrityError,
    diff_releases,
    load_assignment,
    read_manifest,
    verify_release,
)
from exports.splits import SPLITS

DATA_FILES = [f"{split}.{fmt}" for split in SPLITS for fmt in ("csv", "jsonl", "parquet")]


def _build(records, out_dir, documents=None, allow=(), **kwargs):
    kwargs.setdefault("name", "syllabusqa-crowd")
    kwargs.setdefault("version", "1.0.0")
    kwargs.setdefault("seed", 42)
    return build_release(
        records,
        out_dir=out_dir,
        card_inputs=CardInputs(documents=documents or {}, license="CC BY-NC-SA 4.0"),
        privacy_allow=allow,
        **kwargs,
    )


def test_build_release__real_syllabusqa_layout_manifest_and_checksums(
    syllabusqa_records, syllabus_documents, public_contacts, tmp_path
):
    result = _build(
        syllabusqa_records, tmp_path, syllabus_documents, allow=public_contacts, source_batches=[3, 4]
    )
    root = result.path
    assert root == tmp_path / "syllabusqa-crowd-1.0.0"
    manifest = read_manifest(root)
    listed = {f["path"]: f for f in manifest["files"]}
    authors_json = {f"{split}.json" for split in SPLITS}
    assert set(DATA_FILES) | authors_json | {
        "card.md",
        "index.json",
        "plots/lengths.png",
        "plots/types.png",
    } == set(listed)
    assert manifest["source_batches"] == [3, 4]
    assert manifest["split"]["seed"] == 42
    assert manifest["split"]["target_ratios"] == {"train": 0.8, "val": 0.1, "test": 0.1}
    assert sum(listed[f"{s}.csv"]["rows"] for s in SPLITS) == 5078
    assert {s: listed[f"{s}.parquet"]["rows"] for s in SPLITS} == dict(result.counts)
    assert verify_release(root) == {"files": len(listed), "rows": 4 * 5078}  # csv, jsonl, parquet, json
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_build_release__same_seed_gives_byte_identical_files(syllabusqa_records, public_contacts, tmp_path):
    allow = public_contacts
    first = _build(syllabusqa_records, tmp_path / "a", allow=allow)
    second = _build(
        list(reversed(syllabusqa_records)), tmp_path / "b", allow=allow, created=datetime(2030, 1, 1)
    )
    files_a = {f["path"]: f["sha256"] for f in first.manifest["files"]}
    files_b = {f["path"]: f["sha256"] for f in second.manifest["files"]}
    assert files_a == files_b
    for path in files_a:
        assert (first.path / path).read_bytes() == (second.path / path).read_bytes()
    assert first.manifest["created"] != second.manifest["created"]
    other = _build(syllabusqa_records, tmp_path / "c", allow=allow, seed=43, formats="csv")
    assert {f["path"]: f["sha256"] for f in other.manifest["files"]}["train.csv"] != files_a["train.csv"]


def test_build_release__refuses_to_overwrite(make_qa, tmp_path):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 5}") for i in range(20)]
    build_release(records, name="r", version="1", out_dir=tmp_path, formats="jsonl")
    with pytest.raises(ReleaseError, match="exists already"):
        build_release(records, name="r", version="1", out_dir=tmp_path, formats="jsonl")
    with pytest.raises(ReleaseError, match="version '../x'"):
        build_release(records, name="r", version="../x", out_dir=tmp_path)


def test_build_release__privacy_gate_blocks_email_and_leaves_nothing(make_qa, tmp_path):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 4}") for i in range(12)]
    records.append(make_qa(id="leak", answer="Mail me at jdoe1987@gmail.com"))
    with pytest.raises(PrivacyError, match="email"):
        build_release(records, name="r", version="1", out_dir=tmp_path, formats="csv")
    assert list(tmp_path.iterdir()) == []


def test_build_release__loads_with_pandas_and_hf_datasets(
    syllabusqa_records, public_contacts, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets

    root = _build(syllabusqa_records, tmp_path / "rel", allow=public_contacts).path
    counts = {s: len(pd.read_csv(root / f"{s}.csv", keep_default_na=False)) for s in SPLITS}
    assert sum(counts.values()) == 5078
    frame = pd.read_parquet(root / "train.parquet")
    assert list(pd.read_json(root / "train.jsonl", lines=True)["id"]) == list(frame["id"])
    assert list(pd.read_csv(root / "train.csv", keep_default_na=False)["id"]) == list(frame["id"])
    for builder in ("csv", "json", "parquet"):
        ext = "jsonl" if builder == "json" else builder
        loaded = datasets.load_dataset(
            builder,
            data_files={s: str(root / f"{s}.{ext}") for s in SPLITS},
            cache_dir=str(tmp_path / f"hf-{builder}"),
        )
        assert {s: loaded[s].num_rows for s in SPLITS} == counts
        assert loaded["test"]["id"] == list(pd.read_parquet(root / "test.parquet")["id"])
    assert loaded["train"].features["answer_spans"].feature.dtype == "string"


def test_verify_release__detects_changed_and_unlisted_files(make_qa, tmp_path):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 5}") for i in range(20)]
    root = build_release(records, name="r", version="1", out_dir=tmp_path, formats="csv,jsonl").path
    with (root / "train.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": "forged"}\n')
    (root / "extra.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ReleaseIntegrityError) as info:
        verify_release(root)
    assert any(p.startswith("train.jsonl: sha256") for p in info.value.problems)
    assert "extra.txt: not in the manifest" in info.value.problems


def test_diff_releases__added_removed_changed_and_old_items_never_move(
    syllabusqa_records, public_contacts, tmp_path
):
    first_docs = sorted({r.document_id for r in syllabusqa_records})[:50]
    old = [r for r in syllabusqa_records if r.document_id in first_docs]
    v1 = _build(old, tmp_path, version="1", formats="jsonl", allow=public_contacts)
    new = [r for r in syllabusqa_records if r.id != old[0].id]
    edited = old[1]
    new = [
        QARecord(**{**r.__dict__, "answer": r.answer + " (edited)"}) if r.id == edited.id else r for r in new
    ]
    v2 = _build(
        new,
        tmp_path,
        version="2",
        seed=7,
        formats="jsonl",
        allow=public_contacts,
        previous_assignment=load_assignment(v1.path),
    )
    diff = diff_releases(v1.path, v2.path)
    assert diff.removed == [old[0].id]
    assert diff.changed == [edited.id]
    assert len(diff.added) == len(syllabusqa_records) - len(old)
    assert diff.moved == []
    assert v2.manifest["split"]["kept_items"] == len(old) - 1
    index = json.loads((v2.path / "index.json").read_text(encoding="utf-8"))
    assert len({index["documents"][d] for d in first_docs}) == 3


def test_build_release__sciq_mode_real_sciq_both_versions(sciq_records, tmp_path):
    result = build_release(
        sciq_records, name="sciq", version="1", out_dir=tmp_path, formats="jsonl,csv", sciq_mode=True, seed=0
    )
    root = result.path
    assert dict(result.counts) == {"train": 11679, "val": 1000, "test": 1000}
    no_passage = sum(1 for r in sciq_records if not r.has_passage)
    assert result.excluded == {"multiple_choice": 0, "direct_answer": no_passage}
    manifest = verify_release(root) and read_manifest(root)
    rows = {f["path"]: f["rows"] for f in manifest["files"]}
    assert {s: rows[f"multiple_choice/{s}.jsonl"] for s in SPLITS} == dict(result.counts)
    assert sum(rows[f"direct_answer/{s}.jsonl"] for s in SPLITS) == len(sciq_records) - no_passage
    mc = pd.read_json(root / "multiple_choice" / "test.jsonl", lines=True)
    assert "passage" not in mc.columns
    assert all(
        opts["ABCDEF".index(key)] == ans
        for opts, key, ans in zip(mc.options, mc.answer_key, mc.answer, strict=False)
    )
    da = pd.read_csv(root / "direct_answer" / "val.csv", keep_default_na=False)
    assert (da.passage.str.strip() != "").all()
    assert "direct-answer version leaves out" in (root / "card.md").read_text(encoding="utf-8")
