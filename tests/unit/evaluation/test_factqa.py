"""Tests for evaluation/factqa.py: parsing, caching, the insufficient-information rule and failures."""

from __future__ import annotations

import json

import pytest

from evaluation.factqa import (
    InMemoryJudgeCache,
    JsonFileJudgeCache,
    f1_from,
    fact_qa_item_scores,
    is_insufficient,
    judge_pair,
    parse_score,
)
from evaluation.llm import LLMHTTPError, OpenAIChatBackend
from evaluation.metrics import UndefinedMetricWarning
from tests.fakes.fake_openai_server import FakeOpenAIServer, Reply

PAPER_REPLY = (
    "1. Atomic claims made by Answer 1:\n- The seminar meetings will begin on February 10.\n"
    "- The seminar meetings will be from 4:30-6:00pm.\n2. Claims supported by Answer 2:\n"
    "- The seminar meetings will begin on February 10.\n3. Score: 1/2"
)


def _backend(server: FakeOpenAIServer, retries: int = 0) -> OpenAIChatBackend:
    return OpenAIChatBackend(server.api_base, "judge", timeout=1.0, max_retries=retries, retry_wait=0.01)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (PAPER_REPLY, (1, 2)),
        ("3. Summarize the results: Score: 4/4", (4, 4)),
        ("**Score:** 4 / 5", (4, 5)),
        ("Score = 2 out of 3", (2, 3)),
        ("score: 3.0/3", (3, 3)),
        ('template "Score: <n>/<m>" ... Score: 0/3', (0, 3)),
        ("Score: 6/5", None),
        ("Score: 1/0", None),
        ("Score: 1.5/3", None),
        ("I cannot evaluate this.", None),
    ],
)
def test_parse_score__variants(reply: str, expected) -> None:
    assert parse_score(reply) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("No/insufficient information", True),
        ("No/Insufficient Information.", True),
        ("Insufficient information to answer.", True),
        ("No, the exam is not cumulative.", False),
        ("No", False),
    ],
)
def test_is_insufficient__adversarial_answers(answer: str, expected: bool) -> None:
    assert is_insufficient(answer) is expected


def test_judge_pair__paper_example_and_cache_hit() -> None:
    cache = InMemoryJudgeCache()
    with FakeOpenAIServer([Reply(text=PAPER_REPLY)]) as server:
        backend = _backend(server)
        args = (
            "What date do the seminar meetings begin?",
            "Feb 10 from 4:30-6:00pm.",
            "Friday, February 10.",
        )
        first = judge_pair(*args, backend, cache)
        second = judge_pair(*args, backend, cache)
    assert (first.supported, first.total, first.score, first.source) == (1, 2, 0.5, "judge")
    assert second.source == "cache" and second.score == 0.5
    assert len(server.requests) == 1
    prompt = server.requests[0]["messages"][0]["content"]
    assert "Answer 1: Feb 10 from 4:30-6:00pm.\nAnswer 2: Friday, February 10." in prompt


def test_judge_pair__insufficient_rule_skips_the_judge() -> None:
    with FakeOpenAIServer([Reply(text="Score: 1/1")]) as server:
        backend = _backend(server)
        both = judge_pair("Q?", "No/insufficient information", "No/insufficient information", backend)
        one = judge_pair("Q?", "The exam is on May 3.", "No/insufficient information", backend)
        asked = judge_pair("Q?", "No/insufficient information", "May 3", backend, insufficient_rule=False)
    assert (both.score, both.source) == (1.0, "rule")
    assert (one.score, one.source) == (0.0, "rule")
    assert asked.source == "judge"
    assert len(server.requests) == 1


def test_fact_qa_item_scores__precision_recall_f1_per_item() -> None:
    def responder(request: dict) -> str:
        prompt = request["messages"][0]["content"]
        # precision: claims of the prediction ("pred") against the reference; recall: the swap
        return "Score: 1/1" if "Answer 1: pred" in prompt else "Score: 1/2"

    with FakeOpenAIServer([], responder=responder) as server:
        scores = fact_qa_item_scores(
            ["Q1?", "Q2?"], ["pred one", "pred two"], ["ref one", "ref two"], backend=_backend(server)
        )
    assert scores["fact_qa_p"] == [1.0, 1.0]
    assert scores["fact_qa_r"] == [0.5, 0.5]
    assert scores["fact_qa_f"] == pytest.approx([2 / 3, 2 / 3])


def test_fact_qa_item_scores__garbage_reply_is_undefined_with_warning() -> None:
    with FakeOpenAIServer([Reply(text="As an AI I cannot score this.")]) as server:
        with pytest.warns(UndefinedMetricWarning, match="undefined for 1 of 1"):
            scores = fact_qa_item_scores(["Q?"], ["a"], ["b"], backend=_backend(server))
    assert scores == {"fact_qa_p": [None], "fact_qa_r": [None], "fact_qa_f": [None]}


def test_fact_qa_item_scores__server_error_raises_or_is_undefined() -> None:
    with FakeOpenAIServer([Reply(status=500)]) as server:
        with pytest.raises(LLMHTTPError):
            fact_qa_item_scores(["Q?"], ["a"], ["b"], backend=_backend(server))
        with pytest.warns(UndefinedMetricWarning):
            scores = fact_qa_item_scores(["Q?"], ["a"], ["b"], backend=_backend(server), on_error="none")
    assert scores["fact_qa_f"] == [None]


def test_fact_qa_item_scores__timeout_then_rerun_uses_cache(tmp_path) -> None:
    path = tmp_path / "judge.json"
    with FakeOpenAIServer([Reply(text="Score: 2/2"), Reply(text="Score: 1/1", delay=1.5)]) as server:
        with pytest.raises(Exception, match="within"):
            fact_qa_item_scores(
                ["Q?"], ["a"], ["b"], backend=_backend(server), cache=JsonFileJudgeCache(path)
            )
    assert list(json.loads(path.read_text()).values()) == ["Score: 2/2"]
    with FakeOpenAIServer([Reply(text="Score: 1/1")]) as server:
        scores = fact_qa_item_scores(
            ["Q?"], ["a"], ["b"], backend=_backend(server), cache=JsonFileJudgeCache(path)
        )
    assert len(server.requests) == 1  # only the recall call was still missing
    assert scores["fact_qa_p"] == [1.0] and scores["fact_qa_r"] == [1.0]


def test_json_file_judge_cache__rejects_a_corrupt_file(tmp_path) -> None:
    path = tmp_path / "cache.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="cache.json"):
        JsonFileJudgeCache(path)


def test_f1_from__undefined_and_zero() -> None:
    assert f1_from(None, 1.0) is None
    assert f1_from(0.0, 0.0) == 0.0
    assert f1_from(1.0, 0.5) == pytest.approx(2 / 3)


def test_judge_pair__echoed_prompt_gets_one_score_request_in_the_same_conversation() -> None:
    echo = '1. List all of the atomic claims made by Answer 1.\n3. Summarize using "Score: 20%"'
    cache = InMemoryJudgeCache()
    with FakeOpenAIServer([Reply(text=echo), Reply(text=" 3/4")]) as server:
        first = judge_pair("Q?", "a", "b", _backend(server), cache)
        again = judge_pair("Q?", "a", "b", _backend(server), cache)
    assert (first.supported, first.total, first.repaired, first.source) == (3, 4, True, "judge")
    assert first.response is not None and first.response.startswith(echo)
    assert (again.score, again.source, again.repaired) == (0.75, "cache", True)
    assert len(server.requests) == 2  # the second judge_pair is answered from the cache
    follow_up = server.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "user", "assistant"]
    assert follow_up[1]["content"] == echo
    assert follow_up[2]["content"].startswith('Summarize the results using the template "Score: <num')
    assert follow_up[3]["content"] == "Score:"
    assert server.requests[1]["max_tokens"] < server.requests[0]["max_tokens"]


def test_judge_pair__repair_still_without_score_or_disabled_is_undefined() -> None:
    with FakeOpenAIServer([Reply(text="no idea"), Reply(text="no idea either")]) as server:
        failed = judge_pair("Q?", "a", "b", _backend(server))
    assert (failed.score, failed.repaired) == (None, True)
    assert failed.response is not None and failed.response.endswith("no idea either")
    with FakeOpenAIServer([Reply(text="no idea"), Reply(text="Score: 1/1")]) as server:
        plain = judge_pair("Q?", "a", "b", _backend(server), repair=False)
    assert (plain.score, plain.repaired, len(server.requests)) == (None, False, 1)


def test_judge_pair__repair_request_failing_is_undefined_when_asked() -> None:
    with FakeOpenAIServer([Reply(text="no idea"), Reply(status=500)]) as server:
        judgement = judge_pair("Q?", "a", "b", _backend(server), on_error="none")
        with pytest.raises(LLMHTTPError):
            judge_pair("Q2?", "a", "b", _backend(server))
    assert judgement.score is None
