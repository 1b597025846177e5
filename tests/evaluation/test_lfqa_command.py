"""``manage.py lfqa_questions``: questions and complexity ratings for an imported real syllabus, fake LLM."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.textnorm import decode_mac_roman
from tests.factories import make_corpus, make_document
from tests.fakes.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

SYLLABUS = "Syllabus-549"


def _responder(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    if prompt.startswith("Summarize the paragraphs below"):
        return "The course grades homework and a final presentation equally."
    if prompt.startswith("Using the context below"):
        return "1. How do homework and the presentation combine into the grade?\n2. Why is the project split?"
    if prompt.startswith("[Context]"):
        return "{'Q1': 'A', 'Q2': 'C', 'Q3': 'A'}\nThe grading section and the schedule are both needed."
    return "?"


@pytest.fixture
def syllabus(shared_data):
    path = shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "text" / f"{SYLLABUS}.txt"
    corpus = make_corpus(name="syllabusqa")
    return make_document(
        corpus,
        name=SYLLABUS,
        text=decode_mac_roman(path.read_bytes(), path),
        metadata={"area": "Engineering"},
    )


@pytest.fixture
def llm(monkeypatch):
    with FakeOpenAIServer([], responder=_responder) as server:
        monkeypatch.setenv("LLM_API_BASE", server.api_base)
        monkeypatch.setenv("LLM_MODEL", "fake-judge")
        monkeypatch.delenv("LLM_API_KEY", raising=False)
        yield server


def _run(*args: str) -> tuple[list[str], dict]:
    out = StringIO()
    call_command("lfqa_questions", *args, stdout=out)
    lines = out.getvalue().strip().splitlines()
    return lines, json.loads(lines[-1])


def test_lfqa_questions__generates_and_rates_then_reuses_the_cache(syllabus, llm) -> None:
    lines, result = _run("--document", SYLLABUS, "--n", "2", "--backend", "openai")
    calls = len(llm.requests)
    assert result["document_id"] == syllabus.pk and result["corpus"] == "syllabusqa"
    assert (result["requested"], result["generated"], result["answerable"]) == (2, 2, 2)
    assert [q["question"] for q in result["questions"]] == [
        "How do homework and the presentation combine into the grade?",
        "Why is the project split?",
    ]
    complexity = result["questions"][0]["complexity"]
    assert (complexity["context_needed"], complexity["needs_long_context"], complexity["multi_pass"]) == (
        "C",
        True,
        True,
    )
    assert result["summary"] == "The course grades homework and a final presentation equally."
    assert "in the context of Syllabus-549 in Engineering." in llm.requests[0]["messages"][0]["content"]
    assert any(line.startswith("1. How do homework") for line in lines)

    _, again = _run("--document", SYLLABUS, "--n", "2", "--backend", "openai", "--json")
    assert len(llm.requests) == calls  # every reply came from the cache
    assert [q["question"] for q in again["questions"]] == [q["question"] for q in result["questions"]]
    assert [q["complexity"]["source"] for q in again["questions"]] == ["cache", "cache"]


def test_lfqa_questions__json_flag_prints_only_the_summary(syllabus, llm) -> None:
    lines, result = _run("--document", SYLLABUS, "--n", "1", "--backend", "openai", "--json", "--no-cache")
    assert len(lines) == 1 and result["generated"] == 1


def test_lfqa_questions__unknown_document_is_a_clear_error(syllabus) -> None:
    with pytest.raises(CommandError, match="no document named 'nope'"):
        call_command("lfqa_questions", "--document", "nope", "--backend", "openai", stdout=StringIO())


def test_lfqa_questions__unconfigured_endpoint_names_the_variable(syllabus, monkeypatch) -> None:
    monkeypatch.delenv("LLM_API_BASE", raising=False)
    with pytest.raises(CommandError, match="LLM_API_BASE"):
        call_command("lfqa_questions", "--document", SYLLABUS, "--backend", "openai", stdout=StringIO())


def test_lfqa_questions__ambiguous_name_asks_for_the_corpus(syllabus, llm) -> None:
    make_document(make_corpus(name="other"), name=SYLLABUS, text="Another text.")
    with pytest.raises(CommandError, match="--corpus"):
        call_command("lfqa_questions", "--document", SYLLABUS, "--backend", "openai", stdout=StringIO())
    _, result = _run("--document", SYLLABUS, "--corpus", "syllabusqa", "--n", "1", "--backend", "openai")
    assert result["corpus"] == "syllabusqa"
