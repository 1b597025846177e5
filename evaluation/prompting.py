"""Prompt templates (``evaluation/prompts/*.txt``) and the builders that fill them.

The texts are those printed in the papers: SyllabusQA appendix J (J.1 zero-shot and RAG, J.2
chain-of-thought) and table 17 (Fact-QA), and Yao & Barbosa's tables 14 and 17 (QA-to-statement,
entailment, inference steps). Templates use ``str.format`` fields; inserted values are never re-parsed.
The LLaMA-2 ``[INST] <<SYS>>`` wrapping of appendix J becomes a system + user message pair, which each
backend renders with its own chat template.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from evaluation.llm import ChatMessage

PROMPT_DIR = Path(__file__).resolve().parent / "prompts"


@cache
def load_template(name: str) -> str:
    """Return the template ``prompts/<name>.txt`` without its final newline.

    Raises:
        FileNotFoundError: naming the missing template file.
    """
    path = PROMPT_DIR / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"prompt template {path} does not exist")
    return path.read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **fields: str) -> str:
    """Fill template ``name`` with ``fields``.

    Raises:
        KeyError: naming the template and the missing field.
    """
    try:
        return load_template(name).format(**fields)
    except KeyError as error:
        raise KeyError(f"prompt template '{name}' needs field {error}") from error


def one_line(text: str) -> str:
    """Collapse newlines to spaces and strip, as the SyllabusQA prompt code does."""
    return re.sub(r"\s*\n\s*", " ", text).strip()


def rag_context(snippets: Sequence[str]) -> str:
    """Return appendix J's snippet block (empty string when there are no snippets)."""
    if not snippets:
        return ""
    parts = " ".join(
        render("rag_snippet", number=str(i), text=one_line(text)) for i, text in enumerate(snippets, 1)
    )
    return render("rag_context", snippets=parts)


def syllabus_messages(question: str, snippets: Sequence[str] = (), cot: bool = False) -> list[ChatMessage]:
    """Build the zero-shot / RAG (J.1) or chain-of-thought (J.2) messages for one question.

    Args:
        question: the student's question.
        snippets: retrieved syllabus chunks, best first (empty for plain zero-shot).
        cot: use the J.2 system instruction and ask for the question type first.

    Returns:
        A system message and a user message.
    """
    system = load_template("syllabus_cot_system" if cot else "syllabus_system")
    user = render(
        "syllabus_cot_user" if cot else "syllabus_answer_user",
        rag_context=rag_context(snippets),
        question=one_line(question),
    )
    return [ChatMessage("system", system), ChatMessage("user", user)]


def factqa_messages(question: str, answer_1: str, answer_2: str) -> list[ChatMessage]:
    """Build the Fact-QA judge prompt: claims of ``answer_1`` checked against ``answer_2``."""
    text = render(
        "factqa_judge", question=one_line(question), answer_1=one_line(answer_1), answer_2=one_line(answer_2)
    )
    return [ChatMessage("user", text)]
