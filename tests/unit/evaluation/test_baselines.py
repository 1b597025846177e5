"""Tests for evaluation/baselines.py with a scripted backend (no model download, no network)."""

from __future__ import annotations

import pytest

from evaluation.baselines import SystemOptions, parse_cot_output, run_system
from evaluation.llm import ChatMessage
from evaluation.schema import QAItem

SYLLABUS = (
    "Grading. The midterm exam is worth 30% and the final exam is worth 40% of the grade.\n\n"
    "Office hours are on Tuesdays from 2 to 4 pm in room 101.\n\n"
    "Late work. Homework submitted late loses 10% per day."
)
ITEMS = [
    QAItem("1", "When are office hours?", "Tuesdays 2-4 pm", "single factual", "bio101", SYLLABUS),
    QAItem("2", "How much is late homework penalized?", "10% per day", "single factual", "bio101", SYLLABUS),
]


class ScriptedBackend:
    """Records prompts and answers with a fixed reply."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls: list[list[ChatMessage]] = []

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        self.calls.append(messages)
        return self.reply


def test_run_system__search_returns_top_chunk_verbatim_with_progress() -> None:
    seen: list[tuple[int, int]] = []
    predictions = run_system(
        "search",
        ITEMS,
        SystemOptions(search_chunk_size=80, search_chunk_overlap=20),
        lambda done, total: seen.append((done, total)),
    )
    assert "Office hours" in predictions[0].answer
    assert predictions[0].answer in SYLLABUS
    assert "late" in predictions[1].answer.lower()
    assert seen == [(1, 2), (2, 2)]


def test_run_system__rag_puts_five_snippets_in_the_prompt() -> None:
    backend = ScriptedBackend(" Tuesdays. ")
    options = SystemOptions(backend=backend, k=5, chunk_size=40, chunk_overlap=10)
    predictions = run_system("rag", ITEMS[:1], options)
    assert predictions[0].answer == "Tuesdays."
    user = backend.calls[0][1].content
    assert "### Snippet 5:" in user and "### Snippet 6:" not in user
    assert len(predictions[0].context) == 5


def test_run_system__zero_shot_needs_no_document() -> None:
    backend = ScriptedBackend("Probably Monday.")
    item = QAItem("z", "When is the exam?")
    (prediction,) = run_system("zero-shot", [item], SystemOptions(backend=backend))
    assert prediction.answer == "Probably Monday."
    assert "Snippet" not in backend.calls[0][1].content


def test_run_system__cot_parses_type_and_answer() -> None:
    backend = ScriptedBackend(
        "single reasoning\nReasoning steps: Late work loses 10% per day\nAnswer: 20% after two days"
    )
    (prediction,) = run_system("cot", ITEMS[1:], SystemOptions(backend=backend))
    assert prediction.predicted_type == "single reasoning"
    assert prediction.answer == "20% after two days"
    assert prediction.meta["reasoning_steps"] == ["Late work loses 10% per day"]


def test_run_system__bad_input_names_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown system 'bm25'"):
        run_system("bm25", ITEMS)
    with pytest.raises(ValueError, match="item 'x'"):
        run_system("search", [QAItem("x", "Q?")])
    with pytest.raises(ValueError, match="adapter_dir"):
        run_system("sft", ITEMS)


@pytest.mark.parametrize(
    ("reply", "qtype", "answer"),
    [
        ("yes/no\nThe answer is: Yes", "yes/no", "Yes"),
        ("7) no answer\nNo/insufficient information", "no answer", "No/insufficient information"),
        ("3\nAnswer: Quizzes and labs", "multi factual", "Quizzes and labs"),
        ("I think the exam is on Monday.", None, "I think the exam is on Monday."),
    ],
)
def test_parse_cot_output__formats(reply: str, qtype, answer: str) -> None:
    parsed = parse_cot_output(reply)
    assert parsed.question_type == qtype
    assert parsed.answer == answer
