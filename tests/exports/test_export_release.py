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
    call_command("export_release", *args, stdout=out)
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


def test_export_release__privacy_check_blocks_contacts(shared_data, tmp_path: Path) -> None:
    call_command("import_syllabusqa", str(shared_data("syllabusqa")), stdout=StringIO())
    with pytest.raises(CommandError, match="release blocked by the privacy check"):
        _export(
            "--name",
            "s",
            "--version",
            "1",
            "--out",
            str(tmp_path),
            "--corpus",
            "syllabusqa",
            "--formats",
            "csv",
        )
    assert not list(tmp_path.iterdir())


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
