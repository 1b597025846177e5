"""Multiple-choice scoring without Django: reading release files, letters, accuracy, likelihood batching."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from evaluation.llm import continuation_logprobs
from evaluation.mcq import (
    MCQChoice,
    MCQInputError,
    MCQItem,
    accuracy,
    choose_by_loglikelihood,
    loglik_context,
    parse_choice,
    read_mcq_split,
)
from tests.tiny_llm import tiny_llama

OPTIONS = ("oxidants", "antioxidants", "Oxygen", "residues")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", 1),
        ("(C)", 2),
        ("Answer: D.", 3),
        ("The answer is A", 0),
        ("oxygen", 2),
        ("A or B", None),
        ("I am not sure.", None),
        ("E", None),  # only four options
    ],
)
def test_parse_choice(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, OPTIONS) == expected


def test_accuracy__counts_unanswered_as_wrong_and_refuses_no_items() -> None:
    items = [MCQItem(str(i), "q?", OPTIONS, i % 4) for i in range(4)]
    choices = [MCQChoice(0, 0), MCQChoice(1, 0), MCQChoice(None, 2), MCQChoice(0, 3)]
    assert accuracy(items, choices) == {"n": 4, "accuracy": 0.5, "unanswered": 1, "accuracy_norm": 0.75}
    assert "accuracy_norm" not in accuracy(items[:1], [MCQChoice(0)])
    with pytest.raises(MCQInputError):
        accuracy([], [])


def test_choose_by_loglikelihood__sum_and_per_character() -> None:
    item = MCQItem("1", "What gas?", ("a", "bbbbbbbb"), 1)
    seen = {}

    def scorer(context: str, continuations: list[str]) -> list[float]:
        seen["context"], seen["continuations"] = context, continuations
        return [-2.0, -4.5]  # "a" is likelier in total, "bbbbbbbb" per character

    [choice] = choose_by_loglikelihood([item], scorer)
    assert (choice.index, choice.norm_index, choice.scores) == (0, 1, (-2.0, -4.5))
    assert seen == {"context": loglik_context(item), "continuations": [" a", " bbbbbbbb"]}
    assert loglik_context(item) == "Question: What gas?\nAnswer:"


def test_read_mcq_split__jsonl_csv_and_bad_keys(tmp_path: Path) -> None:
    folder = tmp_path / "multiple_choice"
    folder.mkdir()
    row = {"id": "x1", "question": "Which?", "options": list(OPTIONS), "answer_key": "C", "answer": "Oxygen"}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n\n", encoding="utf-8")
    assert read_mcq_split(tmp_path, "test") == [MCQItem("x1", "Which?", OPTIONS, 2)]
    with (folder / "val.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", *(f"option_{c}" for c in "abcdef"), "answer_key"])
        writer.writerow(["x2", "Which?", *OPTIONS[:3], "", "", "", "B"])
    assert read_mcq_split(tmp_path, "val") == [MCQItem("x2", "Which?", OPTIONS[:3], 1)]
    (folder / "train.jsonl").write_text(json.dumps({**row, "answer_key": "F"}) + "\n", encoding="utf-8")
    with pytest.raises(MCQInputError, match="train.jsonl line 1: answer_key 'F'"):
        read_mcq_split(tmp_path, "train")
    with pytest.raises(MCQInputError, match="not a multiple-choice release"):
        read_mcq_split(tmp_path / "nowhere", "test")


class CharTokenizer:
    """One token per byte; enough for scoring (ids only)."""

    pad_token_id = 0
    eos_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        return {"input_ids": list(text.encode("utf-8"))}


def test_continuation_logprobs__padded_batch_equals_each_option_alone() -> None:
    import torch

    model = tiny_llama(256)
    tokenizer = CharTokenizer()
    context, options = "Question: Which gas?\nAnswer:", [" O2", " nitrogen gas", " He"]
    batched = continuation_logprobs(model, tokenizer, context, options)
    for option, value in zip(options, batched, strict=True):
        ids = list((context + option).encode("utf-8"))
        with torch.no_grad():
            logprobs = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits.float(), dim=-1)[0]
        alone = sum(logprobs[p - 1, ids[p]].item() for p in range(len(context), len(ids)))
        assert value == pytest.approx(alone, abs=1e-4)
    assert batched[1] < batched[0]  # more tokens, more negative log-probability mass (random model)
