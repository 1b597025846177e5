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


def test_train_distractor_ranker__deterministic_reaches_the_training_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--deterministic is stored on the job and trains the embeddings on one thread (TrainConfig)."""
    import distractors.training

    seen = []

    def fake_train(config, out, progress):  # the real training is covered by tests/unit/distractors
        seen.append(config)
        return {"model_version": "x"}

    monkeypatch.setattr(distractors.training, "train", fake_train)
    arc = tmp_path / "arc"
    arc.mkdir()
    for flag, expected in (("--deterministic", True), (None, False)):
        args = ["train_distractor_ranker", "--arc", str(arc), "--out", str(tmp_path / "m"), "--sync"]
        result = _last(*(args + [flag] if flag else args))
        assert result["status"] == "done"
        assert seen[-1].deterministic is expected
