"""Releases that drop into the original datasets' own code: SyllabusQA's files and SciQ's JSON.

The checks read the release the way the authors' code does (pandas ``read_csv`` for the splits, the
syllabus texts as ISO-8859-1 from ``./syllabi/``, the metadata with ``unicode_escape``; SciQ's
``json.load`` and its field names), and compare the original-split files with the published ones byte
for byte.
"""

import glob
import json
import os
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command

from annotation.question_types import SPLITS
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS

pytestmark = pytest.mark.django_db


def _export(*args: str) -> dict:
    out = StringIO()
    call_command("export_release", "--sync", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _allow() -> list[str]:
    return [arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)]


def test_syllabusqa_original_splits__published_bytes_and_the_authors_loaders(
    shared_data, tmp_path: Path, monkeypatch
) -> None:
    root = shared_data("syllabusqa")
    call_command("import_syllabusqa", str(root), stdout=StringIO())
    summary = _export(
        "--name", "syllabusqa", "--version", "1.0", "--out", str(tmp_path), "--corpus", "syllabusqa",
        "--use-original-splits", "--formats", "csv", *_allow(),
    )  # fmt: skip
    release = Path(summary["path"])
    published = root / "data" / "dataset_split"
    for split in SPLITS:
        assert (release / f"{split}.csv").read_bytes() == (published / f"{split}.csv").read_bytes()
        assert (release / f"{split}.json").read_bytes() == (published / f"{split}.json").read_bytes()
    texts = sorted(p.name for p in (root / "syllabi" / "syllabi_redacted" / "text").glob("*.txt"))
    assert sorted(p.name for p in (release / "syllabi" / "syllabi_redacted" / "text").glob("*.txt")) == texts
    for name in texts:
        path = Path("syllabi") / "syllabi_redacted" / "text" / name
        assert (release / path).read_bytes() == (root / path).read_bytes(), name
    meta = Path("syllabi") / "syllabi_meta_info.csv"
    assert (release / meta).read_bytes() == (root / meta).read_bytes()
    card = (release / "card.md").read_text(encoding="utf-8")
    assert "Files for the SyllabusQA authors' code" in card and "data_dir=." in card

    # The authors' loaders, as written (code/utils, code/retrievalauggen, code/data_analysis/stats.py).
    monkeypatch.chdir(release)
    data = {
        s: json.loads(pd.read_csv(f"./{s}.csv", encoding="utf-8").to_json(orient="records")) for s in SPLITS
    }
    assert {s: len(rows) for s, rows in data.items()} == {"train": 3018, "val": 957, "test": 1103}
    for split in SPLITS:
        with open(f"{split}.json") as handle:
            assert len(json.load(handle)) == len(data[split])
    syllabi = {}
    for name in glob.glob("./syllabi/syllabi_redacted/text/*.txt"):
        with open(name, encoding="ISO-8859-1") as handle:
            syllabi[name.split("/")[-1].split(".txt")[0]] = handle.read()
    assert {row["syllabus_name"] for rows in data.values() for row in rows} <= set(syllabi)
    frame = pd.read_csv("./syllabi/syllabi_meta_info.csv", encoding="unicode_escape")
    assert len(frame) == 63 and set(frame["filename"]) == set(syllabi)
    assert all(os.path.isfile(f"./syllabi/syllabi_redacted/text/{f}.txt") for f in frame["filename"])


def test_sciq_original_splits__sciq_json_and_shared_passages_reported(shared_data, tmp_path: Path) -> None:
    root = shared_data("sciq")
    call_command("import_sciq", str(root), stdout=StringIO())
    summary = _export(
        "--name", "sciq", "--version", "1.0", "--out", str(tmp_path), "--corpus", "sciq",
        "--sciq-mode", "--use-original-splits", "--formats", "jsonl",
        # SciQ itself repeats 12 question/answer pairs across its splits; passages it shares are not refused.
        "--allow-leakage",
    )  # fmt: skip
    assert summary["counts"] == {"train": 11679, "val": 1000, "test": 1000}
    release = Path(summary["path"])
    for name in ("train.json", "valid.json", "test.json"):
        assert (release / "sciq" / name).read_bytes() == (root / name).read_bytes(), name
    # Code written against SciQ's JSON.
    with open(release / "sciq" / "test.json") as handle:
        items = json.load(handle)
    first = items[0]
    options = [first["distractor1"], first["distractor2"], first["distractor3"], first["correct_answer"]]
    assert len(options) == 4 and isinstance(first["support"], str)
    manifest = json.loads((release / "manifest.json").read_text())
    shared = manifest["split"]["shared_documents"]
    assert shared and all(len(counts) > 1 for counts in shared.values())
    card = (release / "card.md").read_text(encoding="utf-8")
    assert "in more than one split" in card and "Files for SciQ's own format" in card
