"""Tests for evaluation/prompting.py (appendix J and table 17 templates)."""

from __future__ import annotations

from evaluation.prompting import factqa_messages, rag_context, syllabus_messages


def test_syllabus_messages__zero_shot_has_no_snippets() -> None:
    system, user = syllabus_messages("When is the exam?")
    assert (
        system.content == "You are a teaching assistant. Answer questions from students on course logistics."
    )
    assert user.content == "### The question is: When is the exam? ### The answer is:"


def test_syllabus_messages__rag_numbers_snippets_in_order() -> None:
    _, user = syllabus_messages("Q?", ["first\nchunk", "second"])
    assert user.content.startswith("Here are snippets from the course syllabus")
    assert "### Snippet 1: first chunk ### Snippet 2: second The relevant snippets" in user.content
    assert user.content.endswith("### The question is: Q? ### The answer is:")


def test_syllabus_messages__cot_asks_for_the_question_type() -> None:
    system, user = syllabus_messages("Q?", ["s"], cot=True)
    assert "choose the question type from one of these 7 options" in system.content
    assert user.content.endswith("### The question type is:")


def test_rag_context__empty_without_snippets() -> None:
    assert rag_context([]) == ""


def test_factqa_messages__keeps_braces_in_answers() -> None:
    (message,) = factqa_messages("Q {x}?", "A {1}", "B\nline")
    assert "Answer 1: A {1}\nAnswer 2: B line" in message.content
    assert 'template "Score: <num supported claims>/<num total claims>"' in message.content
