"""Tests for exports/suggestions.py and the suggestion files of an MCQ release."""

from __future__ import annotations

import json

import pytest

from exports.records import MCQRecord
from exports.release import build_release
from exports.release_files import ReleaseError, verify_release
from exports.splits import SPLITS
from exports.suggestions import (
    ItemSuggestions,
    ReleasedDistractor,
    ShownSuggestion,
    check_suggestion_ids,
    summarize_suggestions,
    write_suggestions,
)

NAMES = ("oxygen", "helium", "carbon", "argon", "neon", "sodium")


def _log(item_id: str, picked: tuple[int, ...] = (1, 3), validations: int = 1) -> ItemSuggestions:
    shown = tuple(
        ShownSuggestion(text, 0.9 - 0.1 * i, i + 1, "rf-test", picked_by=int(i + 1 in picked))
        for i, text in enumerate(NAMES)
    )
    kept = tuple(ReleasedDistractor(s.text, "model", s.rank) for s in shown if s.picked_by)
    return ItemSuggestions(item_id, validations, shown, (*kept, ReleasedDistractor("lead", "worker")))


def test_write_suggestions__one_line_per_item_with_picked_flags(tmp_path):
    path = tmp_path / "suggestions_train.jsonl"
    assert write_suggestions(path, [_log("q1"), _log("q2", picked=())]) == 2
    first, second = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    assert first["id"] == "q1" and first["validations"] == 1
    assert [s["picked"] for s in first["suggestions"]] == [True, False, True, False, False, False]
    assert first["suggestions"][0] == {
        "text": "oxygen",
        "score": 0.9,
        "rank": 1,
        "model_version": "rf-test",
        "picked": True,
        "picked_by": 1,
    }
    assert first["distractors"][-1] == {"text": "lead", "origin": "worker", "rank": None}
    assert not any(s["picked"] for s in second["suggestions"])


def test_summarize_suggestions__rates_by_rank_and_unvalidated_items_not_counted():
    summary = summarize_suggestions([_log("q1"), _log("q2", picked=(1,)), _log("q3", validations=0)])
    assert summary["questions"] == 3 and summary["validated"] == 2
    assert summary["shown"] == 12 and summary["picked"] == 3
    assert summary["by_rank"][1] == {"shown": 2, "picked": 2, "pick_rate": 1.0}
    assert summary["by_rank"][2]["pick_rate"] == 0.0
    assert summary["distractors"] == {"model": 5, "worker": 3}
    assert summarize_suggestions([_log("q3", validations=0)])["pick_rate"] is None


def test_check_suggestion_ids__unknown_item_raises():
    check_suggestion_ids({"q1": _log("q1")}, ["q1", "q2"])
    with pytest.raises(ValueError, match="'zz'"):
        check_suggestion_ids({"q1": _log("q1"), "zz": _log("zz")}, ["q1"])


def _mcq(n: int) -> list[MCQRecord]:
    return [
        MCQRecord(
            id=f"q{i:02d}",
            question=f"Which gas is number {i} in the list of gases?",
            correct_answer="nitrogen",
            distractors=("oxygen", "carbon", "lead"),
            support=f"Passage {i} about gases.",
        )
        for i in range(n)
    ]


def test_build_release__mcq_suggestion_files_in_manifest_and_card(tmp_path):
    records = _mcq(20)
    logs = {r.id: _log(r.id) for r in records[:12]}
    result = build_release(
        records, name="mcq", version="1", out_dir=tmp_path, formats="jsonl", seed=3, suggestions=logs
    )
    files = {f["path"]: f for f in result.manifest["files"]}
    index = json.loads((result.path / "index.json").read_text(encoding="utf-8"))["items"]
    for split in SPLITS:
        entry = files[f"suggestions_{split}.jsonl"]
        lines = (result.path / entry["path"]).read_text(encoding="utf-8").splitlines()
        ids = [json.loads(line)["id"] for line in lines]
        assert entry["rows"] == len(ids)
        assert all(index[i]["split"] == split for i in ids)
    assert sum(files[f"suggestions_{s}.jsonl"]["rows"] for s in SPLITS) == 12
    assert "multiple_choice/train.jsonl" in files
    assert "suggestions" not in (result.path / "multiple_choice" / "train.jsonl").read_text(encoding="utf-8")
    card = (result.path / "card.md").read_text(encoding="utf-8")
    assert "## Distractor suggestions" in card and "Validators kept 24 of 72 suggestions" in card
    assert verify_release(result.path)["files"] == len(files)


def test_build_release__no_logs_no_suggestion_files_and_qa_release_refuses_logs(tmp_path, make_qa):
    plain = build_release(_mcq(10), name="mcq", version="1", out_dir=tmp_path, formats="csv")
    assert not list(plain.path.glob("suggestions_*"))
    assert "Distractor suggestions" not in (plain.path / "card.md").read_text(encoding="utf-8")
    qa = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 4}") for i in range(8)]
    with pytest.raises(ReleaseError, match="multiple-choice"):
        build_release(
            qa, name="qa", version="1", out_dir=tmp_path, formats="csv", suggestions={"q1": _log("q1")}
        )
    with pytest.raises(ReleaseError, match="not in the release"):
        build_release(_mcq(4), name="m2", version="1", out_dir=tmp_path, suggestions={"zz": _log("zz")})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcq-1"]
