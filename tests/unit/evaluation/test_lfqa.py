"""Tests for the LFQA modules (evaluation/lfqa*.py) against the scripted local OpenAI-compatible server."""

from __future__ import annotations

import logging
import re

import pytest

from annotation.textnorm import decode_mac_roman
from evaluation.factqa import InMemoryJudgeCache
from evaluation.lfqa import (
    CRITERIA,
    ComplexityRating,
    generate_questions,
    judge_item_scores,
    majority_rating,
    parse_complexity,
    parse_judge_scores,
    parse_questions,
    rate_complexity,
    select_context,
    split_sections,
)
from evaluation.llm import OpenAIChatBackend
from evaluation.schema import Prediction, QAItem
from tests.fakes.fake_openai_server import FakeOpenAIServer, Reply

PAPER_REPLY = (
    "'Assistant 1': 'coherence': 3, 'relevance': 2, 'factual consistency': 1, 'accuracy': 2, "
    "'Assistant 2': 'coherence': 0, 'relevance': 0, 'factual consistency': 0, 'accuracy': 0, "
    "'Explanation': 'Preference: Assistant 1. Its coherence: 1 is fine.'"
)
GOOD = {"coherence": 3.0, "relevance": 2.0, "factual_consistency": 1.0, "accuracy": 2.0}
NONE = {name: None for name in CRITERIA}


def _words(text: str) -> int:
    return len(text.split())


def _backend(server: FakeOpenAIServer, timeout: float = 1.0) -> OpenAIChatBackend:
    return OpenAIChatBackend(server.api_base, "judge", timeout=timeout, max_retries=0, retry_wait=0.01)


def _item(i: int = 1, answer: str = "Exams are 60% of the grade.") -> QAItem:
    return QAItem(
        id=f"q{i}",
        question=f"How much are exams worth {i}?",
        answer=answer,
        document_name="bio101",
        document="Grading. Exams are 60% of the grade. Homework is 40%.",
    )


def _real_syllabus(shared_data, name: str = "Syllabus-549") -> str:
    path = shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "text" / f"{name}.txt"
    return decode_mac_roman(path.read_bytes(), path)


# --- judge parsing -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (PAPER_REPLY, GOOD),
        (
            '{"Assistant 1": {"coherence": 3, "relevance": 2, "factual_consistency": 1, "accuracy": 2},'
            ' "Assistant 2": {"coherence": 1, "relevance": 1, "factual_consistency": 3, "accuracy": 3}}',
            GOOD,
        ),
        ("Coherence: 3\nRelevance: 2\nFactual consistency: 1\nAccuracy: 2\n\nThe answer is short.", GOOD),
        ("**Coherency** - 3/3, **Relevance** = 2, factual-consistency is 1, accuracy: 2.0", GOOD),
        (
            "Coherence: 4\nRelevance: 2\nFactual consistency: -1\nAccuracy: 2",
            {**GOOD, "coherence": None, "factual_consistency": None},
        ),
        (
            "Coherence: 8/10, Relevance: 2, Factual consistency: 1, Accuracy: 2.5",
            {**GOOD, "coherence": None, "accuracy": None},
        ),
        ("I am sorry, I cannot rate these answers.", NONE),
    ],
    ids=["paper-dict", "nested-json", "lines", "messy-markdown", "out-of-range", "other-scale", "garbage"],
)
def test_parse_judge_scores__formats(reply: str, expected: dict) -> None:
    assert parse_judge_scores(reply) == expected


def test_parse_judge_scores__reads_the_second_assistant_separately() -> None:
    assert parse_judge_scores(PAPER_REPLY, assistant=2) == dict.fromkeys(CRITERIA, 0.0)


# --- judge runs ----------------------------------------------------------------------------------------


def test_judge_item_scores__prompt_holds_context_question_and_both_answers() -> None:
    with FakeOpenAIServer([Reply(text=PAPER_REPLY)]) as server:
        scores = judge_item_scores(
            [_item()], [Prediction(id="q1", answer="Sixty percent.")], _backend(server)
        )
    assert scores == [GOOD]
    system, user = server.requests[0]["messages"]
    assert system["role"] == "system" and "4 verticals" in system["content"]
    text = user["content"]
    assert text.index("[Context]\nGrading. Exams are 60%") < text.index("[Question]\nHow much are exams")
    assert "[The Start of Assistant 1's Answer]\nSixty percent.\n" in text
    assert "[The Start of Assistant 2's Answer]\nExams are 60% of the grade.\n" in text
    assert server.requests[0]["temperature"] == 0.0


def test_judge_item_scores__no_reference_uses_the_single_answer_prompt() -> None:
    with FakeOpenAIServer(
        [Reply(text="Coherence: 1\nRelevance: 1\nFactual consistency: 1\nAccuracy: 1")]
    ) as server:
        scores = judge_item_scores(
            [_item(answer="")], [Prediction(id="q1", answer="Sixty.")], _backend(server)
        )
    assert scores == [dict.fromkeys(CRITERIA, 1.0)]
    text = server.requests[0]["messages"][1]["content"]
    assert "Assistant 2" not in text and "an AI assistant" in text


def test_judge_item_scores__second_call_is_served_from_the_cache() -> None:
    cache = InMemoryJudgeCache()
    items = [_item(1), _item(2)]
    predictions = [Prediction(id="q2", answer="b"), Prediction(id="q1", answer="a")]
    with FakeOpenAIServer([Reply(text=PAPER_REPLY)]) as server:
        first = judge_item_scores(items, predictions, _backend(server), cache)
        second = judge_item_scores(items, predictions, _backend(server), cache)
    assert first == second == [GOOD, GOOD]
    assert len(server.requests) == 2


def test_judge_item_scores__unreadable_reply_is_repaired_once() -> None:
    replies = [
        Reply(text="Both answers are fine."),
        Reply(text='{"coherence": 2, "relevance": 3, "factual consistency": 1, "accuracy": 0}'),
    ]
    with FakeOpenAIServer(replies) as server:
        scores = judge_item_scores([_item()], [Prediction(id="q1", answer="a")], _backend(server))
    assert scores == [{"coherence": 2.0, "relevance": 3.0, "factual_consistency": 1.0, "accuracy": 0.0}]
    roles = [m["role"] for m in server.requests[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_judge_item_scores__garbage_twice_gives_none_and_logs(caplog) -> None:
    with FakeOpenAIServer([Reply(text="No idea.")]) as server, caplog.at_level(logging.WARNING):
        scores = judge_item_scores([_item()], [Prediction(id="q1", answer="a")], _backend(server))
    assert scores == [NONE]
    assert len(server.requests) == 2
    assert "item 'q1' has undefined criteria" in caplog.text


def test_judge_item_scores__http_500_gives_none_and_the_run_goes_on(caplog) -> None:
    with FakeOpenAIServer([Reply(status=500), Reply(text=PAPER_REPLY)]) as server:
        with caplog.at_level(logging.WARNING):
            scores = judge_item_scores(
                [_item(1), _item(2)],
                [Prediction(id="q1", answer="a"), Prediction(id="q2", answer="b")],
                _backend(server),
            )
    assert scores == [NONE, GOOD]
    assert "HTTP 500" in caplog.text


def test_judge_item_scores__timeout_gives_none_and_is_not_cached(caplog) -> None:
    cache = InMemoryJudgeCache()
    with FakeOpenAIServer([Reply(text=PAPER_REPLY, delay=1.0)]) as server, caplog.at_level(logging.WARNING):
        scores = judge_item_scores([_item()], [Prediction(id="q1", answer="a")], _backend(server, 0.2), cache)
    assert scores == [NONE]
    assert "within" in caplog.text
    assert cache.data == {}


def test_judge_item_scores__missing_prediction_names_the_id() -> None:
    with pytest.raises(ValueError, match="id 'q2'"):
        judge_item_scores([_item(1), _item(2)], [Prediction(id="q1", answer="a")], backend=None)  # type: ignore[arg-type]


# --- complexity ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("{'Q1': 'A', 'Q2': 'C', 'Q3': 'A'}\nThe question links grading and exams.", (True, "C", True)),
        ('{"Q1": "A. Yes", "Q2": "B. More than 2 sentences", "Q3": "B. No"}', (True, "B", False)),
        ("Q1: Yes\nQ2. Most of the context given\nQ3: No", (True, "D", False)),
        (
            "Q1: Is the question answerable? A. Yes B. No\nQ1: B\nQ2: Atleast a third\nQ3: (A)",
            (False, "C", True),
        ),
        ("{'Q1': 'C', 'Q2': 'E', 'Q3': 'maybe'}", (None, None, None)),
        ("This question is hard.", (None, None, None)),
    ],
    ids=["paper-dict", "json-with-labels", "words", "echo-then-answer", "out-of-range", "garbage"],
)
def test_parse_complexity__formats(reply: str, expected: tuple) -> None:
    assert parse_complexity(reply)[:3] == expected


def test_parse_complexity__explanation_follows_the_choices() -> None:
    assert parse_complexity("{'Q1': 'A', 'Q2': 'C', 'Q3': 'A'}\nIt needs two sections.")[3] == (
        "It needs two sections."
    )


def test_rate_complexity__prompt_and_cached_rating() -> None:
    cache = InMemoryJudgeCache()
    with FakeOpenAIServer([Reply(text="{'Q1': 'A', 'Q2': 'D', 'Q3': 'A'}")]) as server:
        first = rate_complexity("Why?", _backend(server), context="The passage.", cache=cache)
        second = rate_complexity("Why?", _backend(server), context="The passage.", cache=cache)
    assert (first.answerable, first.context_needed, first.multi_pass, first.source) == (
        True,
        "D",
        True,
        "judge",
    )
    assert first.needs_long_context is True and second.source == "cache"
    assert len(server.requests) == 1
    text = server.requests[0]["messages"][0]["content"]
    assert text.startswith("[Context]\nThe passage.\n\n[Question]\nWhy?\n\nWe would like to request")
    assert "Q3: Does the question require multiple passes through the passage?" in text


def test_rate_complexity__three_votes_sampled_and_combined_by_majority() -> None:
    replies = [
        Reply(text="{'Q1': 'B', 'Q2': 'A', 'Q3': 'B'}"),
        Reply(text="{'Q1': 'A', 'Q2': 'C', 'Q3': 'B'}"),
        Reply(text="{'Q1': 'A', 'Q2': 'C', 'Q3': 'A'}"),
    ]
    with FakeOpenAIServer(replies) as server:
        rating = rate_complexity("Why?", _backend(server), context="c", cache=InMemoryJudgeCache(), votes=3)
    assert (rating.answerable, rating.context_needed, rating.multi_pass) == (True, "C", False)
    assert (rating.source, rating.votes) == ("vote", 3)
    assert [r["temperature"] for r in server.requests] == [0.8, 0.9, 1.0]


def test_rate_complexity__server_error_gives_an_unparsed_rating(caplog) -> None:
    with FakeOpenAIServer([Reply(status=500)]) as server, caplog.at_level(logging.WARNING):
        rating = rate_complexity("Why?", _backend(server), context="c")
    assert rating.source == "error" and not rating.parsed
    assert "complexity rating failed" in caplog.text


def test_majority_rating__tie_is_undefined() -> None:
    ratings = [ComplexityRating(True, "A", True), ComplexityRating(False, "A", None)]
    combined = majority_rating(ratings)
    assert (combined.answerable, combined.context_needed, combined.multi_pass) == (None, "A", True)


# --- sections and questions ------------------------------------------------------------------------------


def test_split_sections__drops_non_informative_sections_and_respects_sizes() -> None:
    intro = "Course Overview\n" + "This course covers cells and their parts in detail. " * 8
    grading = "Grading\n" + "Exams count for sixty percent of the final grade. " * 30
    references = "References\n" + "Smith, J. Cell Biology. 2020. " * 5
    schedule = "Schedule\n" + "Week one covers membranes and transport. " * 3
    text = "\n".join([intro, grading, references, schedule])
    sections = split_sections(text, min_tokens=100, max_tokens=200, count_tokens=_words)
    assert all(section.tokens <= 200 for section in sections)
    assert not any("Smith" in section.text for section in sections)
    assert "References" not in [h for s in sections for h in s.headings]
    assert sections[0].text.startswith("Course Overview")
    assert any("Week one" in section.text for section in sections)
    assert all(text[s.start : s.end].startswith(s.text[:20]) for s in sections)


def test_split_sections__wiki_markdown_and_numbered_headings_are_recognised_for_dropping() -> None:
    body = "Cells divide and grow in many different ways over time. " * 30
    text = (
        f"== Biology ==\n{body}\n== See also ==\nOther pages on cells.\n# References\n[1] A book, 2020.\n"
        f"2. External links:\nSee example.org.\nFurther Reading\nA list of books.\nSchedule\n{body}"
    )
    sections = split_sections(text, min_tokens=50, max_tokens=400, count_tokens=_words)
    kept = " ".join(section.text for section in sections)
    for dropped in ("Other pages", "A book", "example.org", "A list"):
        assert dropped not in kept
    assert "Biology" in kept and "Schedule" in kept
    # Nothing else is lost: both bodies and the kept headings ("== Biology ==", "Schedule").
    assert sum(_words(section.text) for section in sections) == 2 * _words(body) + 3 + 1


def test_split_sections__real_syllabus_passages_follow_the_paper_sizes(shared_data) -> None:
    text = _real_syllabus(shared_data, "PH224_Syllabus_Spring23")
    sections = split_sections(text)
    assert len(sections) > 3
    assert all(s.tokens <= 2048 for s in sections)
    assert all(s.tokens >= 256 for s in sections[:-1])
    assert [s.start for s in sections] == sorted(s.start for s in sections)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            "Here are the top 3 questions:\n1. Why A?\n2. **How B?**\n3) What C? (most simple)",
            ["Why A?", "How B?", "What C?"],
        ),
        ("- Why A?\n- why a?\n- How B?", ["Why A?", "How B?"]),
        ("Question 1: Explain A.\nQuestion 2: Describe B.", ["Explain A.", "Describe B."]),
        ("I cannot help with that.", []),
    ],
)
def test_parse_questions__formats(reply: str, expected: list[str]) -> None:
    assert parse_questions(reply) == expected


def _scripted(request: dict) -> str:
    prompt = request["messages"][-1]["content"]
    if prompt.startswith("Summarize the paragraphs below"):
        passage = prompt.split("\n\n", 1)[1]
        return "SUMMARY: " + " ".join(passage.split()[:12])
    if prompt.startswith("Using the context below, come up with follow-up questions"):
        n = int(re.search(r"display only the top (\d+)", prompt).group(1))
        return "Top questions:\n" + "\n".join(
            f"{i}. How does part {i} relate to the grading?" for i in range(1, n + 1)
        )
    if prompt.startswith("Using the context below, come up with"):
        first = prompt.split("\n\n", 1)[1].split()[0]
        return f"1. What does {first} mean?\n2. Why {first}?"
    return "?"


def test_generate_questions__real_syllabus_sections_then_document_summary(shared_data) -> None:
    text = _real_syllabus(shared_data)
    sections = split_sections(text)
    cache = InMemoryJudgeCache()
    with FakeOpenAIServer([], responder=_scripted) as server:
        questions = generate_questions(
            text, _backend(server), 5, title="CEE 549", domain="Civil Engineering", cache=cache
        )
        calls = len(server.requests)
        again = generate_questions(
            text, _backend(server), 5, title="CEE 549", domain="Civil Engineering", cache=cache
        )
    prompts = [r["messages"][-1]["content"] for r in server.requests[:calls]]
    summaries = [
        p
        for p in prompts
        if p.startswith("Summarize the paragraphs below in the context of CEE 549 in Civil")
    ]
    assert len(sections) >= 2
    assert len(summaries) == len(sections) + 1  # one per section, then the section summaries together
    assert summaries[-1].count("SUMMARY: ") == len(sections)
    assert prompts[-1].startswith("Using the context below, come up with follow-up questions")
    assert "display only the top 5." in prompts[-1]
    assert [q.question for q in questions] == [
        f"How does part {i} relate to the grading?" for i in range(1, 6)
    ]
    assert [q.rank for q in questions] == [1, 2, 3, 4, 5]
    assert questions[0].setting == "summary" and questions[0].summary_source in prompts[-1]
    assert again == questions and len(server.requests) == calls


def test_generate_questions__passage_setting_interleaves_ranks(shared_data) -> None:
    text = _real_syllabus(shared_data)
    sections = split_sections(text)
    with FakeOpenAIServer([], responder=_scripted) as server:
        questions = generate_questions(text, _backend(server), 3, setting="passage")
    assert len(server.requests) == len(sections)
    assert "come up with three questions" in server.requests[0]["messages"][0]["content"]
    assert [q.rank for q in questions] == [1] * min(3, len(sections)) + [2] * max(0, 3 - len(sections))
    assert questions[0].summary_source is None and questions[0].section_index == 0


def test_generate_questions__rejects_an_empty_document() -> None:
    with pytest.raises(ValueError, match="no text"):
        generate_questions("  \n ", backend=None, n=3, count_tokens=_words)  # type: ignore[arg-type]


def test_select_context__long_document_keeps_relevant_chunks_within_budget(shared_data) -> None:
    text = _real_syllabus(shared_data, "Legal 297BL Syllabus")
    context = select_context(text, "What is the grading distribution?", max_chars=3000)
    assert len(context) <= 3000
    assert "GRADING DISTRIBUTION" in context
    assert select_context("short text", "q") == "short text"
