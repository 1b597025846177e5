"""export_release on the imported real datasets: original-split round trip, disjoint syllabi, SciQ mode."""

import csv
import hashlib
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS

pytestmark = pytest.mark.django_db


def _export(*args: str) -> dict:
    out = StringIO()
    call_command("export_release", "--sync", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _allow() -> list[str]:
    return [arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)]


def _rows(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_export_release__original_splits_round_trip_and_fresh_split(shared_data, tmp_path: Path) -> None:
    root = shared_data("syllabusqa")
    call_command("import_syllabusqa", str(root), stdout=StringIO())
    summary = _export(
        "--name",
        "syllabusqa",
        "--version",
        "1.0",
        "--out",
        str(tmp_path),
        "--corpus",
        "syllabusqa",
        "--use-original-splits",
        "--formats",
        "csv,jsonl",
        *_allow(),
    )
    release = Path(summary["path"])
    for split in ("train", "val", "test"):
        original = {r["id"]: r for r in _rows(root / "data" / "dataset_split" / f"{split}.csv")}
        exported = {r["id"]: r for r in _rows(release / f"{split}.csv")}
        assert exported == original
    manifest = json.loads((release / "manifest.json").read_text())
    for entry in manifest["files"]:
        path = release / entry["path"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]

    fresh = _export(
        "--name",
        "syllabusqa-resplit",
        "--version",
        "1.0",
        "--out",
        str(tmp_path),
        "--corpus",
        "syllabusqa",
        "--seed",
        "7",
        "--formats",
        "csv",
        *_allow(),
    )
    path = Path(fresh["path"])
    syllabi = {s: {r["syllabus_name"] for r in _rows(path / f"{s}.csv")} for s in ("train", "val", "test")}
    assert not (
        syllabi["train"] & syllabi["val"]
        or syllabi["train"] & syllabi["test"]
        or syllabi["val"] & syllabi["test"]
    )
    for split, target in (("train", 0.8), ("val", 0.1), ("test", 0.1)):
        assert abs(fresh["achieved_ratios"][split] - target) <= 0.02

    again = _export(
        "--name",
        "syllabusqa-resplit",
        "--version",
        "1.1",
        "--out",
        str(tmp_path),
        "--corpus",
        "syllabusqa",
        "--seed",
        "7",
        "--formats",
        "csv",
        *_allow(),
    )
    for split in ("train", "val", "test"):
        assert (Path(again["path"]) / f"{split}.csv").read_bytes() == (path / f"{split}.csv").read_bytes()


def test_export_release__sciq_mode(shared_data, tmp_path: Path) -> None:
    call_command("import_sciq", str(shared_data("sciq")), stdout=StringIO())
    summary = _export(
        "--name",
        "sciq",
        "--version",
        "1.0",
        "--out",
        str(tmp_path),
        "--corpus",
        "sciq",
        "--sciq-mode",
        "--formats",
        "jsonl",
    )
    assert summary["counts"] == {"train": 11679, "val": 1000, "test": 1000}
    # SciQ asks some questions twice with the same answer, from different passages: the splitter draws
    # those passages together, so its own leakage check (no --allow-leakage here) finds nothing.
    assert summary["warnings"] == []
    release = Path(summary["path"])
    first = json.loads((release / "multiple_choice" / "test.jsonl").read_text().splitlines()[0])
    assert "support" not in first and "passage" not in first
    direct = sum(
        (release / "direct_answer" / f"{s}.jsonl").read_text().count("\n") for s in ("train", "val", "test")
    )
    assert direct == 13679 - 1427


def test_export_release__unknown_corpus(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no corpus named 'nope'"):
        _export("--name", "x", "--version", "1", "--out", str(tmp_path), "--corpus", "nope")


def test_export_release__privacy_gate_then_allow_file_registers_and_loads(
    shared_data, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets
    import pandas as pd

    from exports.models import Release

    call_command("import_syllabusqa", str(shared_data("syllabusqa")), stdout=StringIO())
    blocked = tmp_path / "blocked"
    with pytest.raises(CommandError, match="release blocked by the privacy check"):
        _export("--name", "s", "--version", "1", "--out", str(blocked), "--corpus", "syllabusqa")
    assert not list(blocked.iterdir())
    assert not Release.objects.exists()

    allow = tmp_path / "privacy-allow.txt"
    allow.write_text(
        "# Public office contacts quoted in SyllabusQA answers, reviewed.\n\n"
        + "\n".join(f"{value}  # university office" for value in SYLLABUSQA_PUBLIC_CONTACTS)
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    summary = _export(
        "--name", "syllabusqa", "--version", "2.0", "--out", str(out), "--corpus", "syllabusqa",
        "--privacy-allow-file", str(allow),
    )  # fmt: skip
    release = Path(summary["path"])
    row = Release.objects.get(pk=summary["release_id"])
    assert (row.name, row.version, row.path, row.source) == (
        "syllabusqa",
        "2.0",
        str(release),
        "corpus syllabusqa",
    )
    assert row.counts == summary["counts"]

    rows = {e["path"]: e["rows"] for e in json.loads((release / "manifest.json").read_text())["files"]}
    splits = ("train", "val", "test")
    assert sum(rows[f"{s}.csv"] for s in splits) == 5078
    for builder, ext in (("csv", "csv"), ("json", "jsonl"), ("parquet", "parquet")):
        loaded = datasets.load_dataset(
            builder,
            data_files={s: str(release / f"{s}.{ext}") for s in splits},
            cache_dir=str(tmp_path / f"hf-{builder}"),
        )
        assert {s: loaded[s].num_rows for s in splits} == {s: rows[f"{s}.{ext}"] for s in splits}
    readers = {
        "csv": lambda p: pd.read_csv(p, keep_default_na=False, dtype=str),
        "jsonl": lambda p: pd.read_json(p, lines=True, dtype=False),
        "parquet": pd.read_parquet,
    }
    for ext, read in readers.items():
        for split in splits:
            assert len(read(release / f"{split}.{ext}")) == rows[f"{split}.{ext}"]

    again = tmp_path / "elsewhere"
    with pytest.raises(CommandError, match=r"syllabusqa 2.0 is registered already as Release\(\d+\)"):
        _export("--name", "syllabusqa", "--version", "2.0", "--out", str(again), "--corpus", "syllabusqa")
    assert not again.exists()


def test_export_release__missing_allow_file(tmp_path: Path) -> None:
    with pytest.raises(
        CommandError, match=r"--privacy-allow-file: privacy allow file .*absent\.txt: no such"
    ):
        _export(
            "--name", "x", "--version", "1", "--out", str(tmp_path), "--corpus", "nope",
            "--privacy-allow-file", str(tmp_path / "absent.txt"),
        )  # fmt: skip
