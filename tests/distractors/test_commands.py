"""suggest_distractors and train_distractor_ranker as a user calls them."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def _last(*args: str) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_suggest_distractors__fallback_before_training(tmp_path: Path, wordnet) -> None:
    result = _last(
        "suggest_distractors",
        "--question",
        "Which organ pumps blood?",
        "--answer",
        "heart",
        "--model-dir",
        str(tmp_path / "none"),
        "--top",
        "4",
    )
    assert result["suggester"] == "WordNetSiblingFallback"
    assert [s["rank"] for s in result["suggestions"]] == [1, 2, 3, 4]
    assert "heart" not in {s["text"] for s in result["suggestions"]}


def test_suggest_distractors__jsonl_in_and_out(tmp_path: Path, wordnet) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps({"id": 1, "question": "What gas do plants absorb?", "answer": "carbon dioxide"}) + "\n"
    )
    target = tmp_path / "out.jsonl"
    summary = _last(
        "suggest_distractors",
        "--input",
        str(source),
        "--output",
        str(target),
        "--model-dir",
        str(tmp_path / "none"),
    )
    assert summary["questions"] == 1
    (row,) = [json.loads(line) for line in target.read_text().splitlines()]
    assert row["id"] == 1 and len(row["suggestions"]) == 6


def test_suggest_distractors__bad_input_line(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"question": "Q?"}\n')
    with pytest.raises(CommandError, match="in.jsonl line 1: needs non-empty 'question' and 'answer'"):
        call_command(
            "suggest_distractors",
            "--input",
            str(source),
            "--output",
            str(tmp_path / "o.jsonl"),
            "--model-dir",
            str(tmp_path),
        )


def test_train_distractor_ranker__rejects_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--arc .*nowhere: no such folder"):
        call_command("train_distractor_ranker", "--arc", str(tmp_path / "nowhere"), "--sync")
