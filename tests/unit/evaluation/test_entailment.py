"""Tests for evaluation/entailment.py and evaluation/lexical_match.py."""

from __future__ import annotations

import pytest

from evaluation.entailment import (
    ENTAILMENT_KEYS,
    EntailmentJudge,
    LexicalNLIBackend,
    LLMNLIBackend,
    LLMStatementConverter,
    answer_set,
    count_inference,
    entailment_item_scores,
    evaluate_answer,
    inference_gap_mark,
    nli_label,
    qa_to_statement,
)
from evaluation.factqa import InMemoryJudgeCache
from evaluation.lexical_match import lexical_match
from evaluation.llm import ChatMessage


class Scripted:
    name = "scripted"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        return self.replies.pop(0)


def test_qa_to_statement__who_question_puts_answer_first() -> None:
    assert qa_to_statement("who wrote the first declaration of human rights", "Cyrus") == (
        "Cyrus wrote the first declaration of human rights."
    )


def test_answer_set__four_sets() -> None:
    assert answer_set(True, True) == "equivalent"
    assert answer_set(True, False) == "more_informative"
    assert answer_set(False, True) == "less_informative"
    assert answer_set(False, False) == "incorrect"


def test_evaluate_answer__more_informative_answer_is_correct_with_partial_mark() -> None:
    q = "where is the tv show the curse of oak island filmed"
    nli = LexicalNLIBackend()
    more = evaluate_answer(q, "on Oak Island, an island off Nova Scotia, Canada", ["Oak Island"], nli)
    wrong = evaluate_answer(q, "in Toronto", ["Oak Island"], nli)
    same = evaluate_answer(q, "Oak Island", ["Nova Scotia", "Oak Island"], nli)
    assert more.answer_set == "more_informative" and more.correct and 0 < more.partial_mark < 100
    assert wrong.answer_set == "incorrect" and not wrong.correct and wrong.partial_mark == 0
    assert same.answer_set == "equivalent" and same.gold_index == 1 and same.partial_mark == 100


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Entailment.", "entailment"),
        ("the premise entails the hypothesis.", "entailment"),
        ("Contradiction", "contradiction"),
        ("The hypothesis contradicts the premise, so it is not entailment.", "contradiction"),
        ("The premise does not entail the hypothesis.", "neutral"),
        ("Not entailment.", "neutral"),
        ("Neutral. (Not entailment, not contradiction.)", "neutral"),
        ("I am not sure", None),
    ],
)
def test_nli_label__first_label_named_wins_and_verbs_count(reply: str, expected) -> None:
    assert nli_label(reply) == expected


def test_llm_backends__parse_replies() -> None:
    assert LLMNLIBackend(Scripted("Entailment.")).classify("p", "h") == "entailment"
    assert LLMNLIBackend(Scripted("I am not sure")).classify("p", "h") == "neutral"
    assert (
        LLMStatementConverter(Scripted("S: Cyrus wrote it.\nextra"))("who wrote it", "Cyrus")
        == "Cyrus wrote it."
    )


def test_count_inference__steps_and_tags() -> None:
    explanation = (
        "1. Filmed on Oak Island. (Given)\n2. Oak Island is in Nova Scotia. [[INFO]]\n3. Therefore ..."
    )
    assert count_inference(explanation) == (3, 1, 0)
    assert inference_gap_mark(3, 1, 0) == 67.0


@pytest.mark.parametrize(
    ("system", "golds", "expected"),
    [
        (
            "The first Nobel Prize in Physics was awarded to Wilhelm Röntgen in 1901.",
            ["Wilhelm Röntgen"],
            True,
        ),
        ("It was Marie Curie.", ["Wilhelm Conrad Röntgen", "Röntgen"], False),
        ("Max Planck", ["Wilhelm Röntgen"], False),
        # A gold answer that normalizes to "" matches, as in EVOUNA's own code ('' in answer).
        ("The blood type is O negative.", ["A+", "AB+"], True),
        ("Max Planck", [], False),
    ],
)
def test_lexical_match__normalized_substring(system: str, golds: list[str], expected: bool) -> None:
    assert lexical_match(system, golds) is expected


class Counting:
    """Restates an answer as itself ("S: ..."), says entailment when the premise holds the hypothesis."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        self.calls += 1
        prompt = messages[-1].content
        if prompt.startswith("Convert"):
            return "S: " + prompt.rsplit("\nA: ", 1)[1].rsplit("\nS:", 1)[0]
        if prompt.startswith("Please identify"):
            premise = prompt.split("Premise: ", 1)[1].split("\nHypothesis: ", 1)[0]
            hypothesis = prompt.split("\nHypothesis: ", 1)[1].split("\n", 1)[0]
            return "Entailment" if hypothesis.lower() in premise.lower() else "Neutral"
        return "1. one step (Given)"  # mark 90


def test_entailment_item_scores__fraction_judged_correct_and_marks_with_cached_replies() -> None:
    backend, cache = Counting(), InMemoryJudgeCache()
    args = (
        ["where is it filmed"] * 3,
        ["Oak Island", "on Oak Island, Nova Scotia", "Toronto"],
        ["Oak Island", "Oak Island", "Oak Island"],
    )
    progress: list[tuple[int, int]] = []
    scores = entailment_item_scores(
        *args, judge=EntailmentJudge.llm(backend, cache), progress=lambda d, t: progress.append((d, t))
    )
    # equivalent, more informative (one inference step: 90), incorrect
    assert scores == {"entailment": [1.0, 1.0, 0.0], "entailment_mark": [1.0, 0.9, 0.0]}
    assert tuple(scores) == ENTAILMENT_KEYS and progress == [(1, 3), (2, 3), (3, 3)]
    calls = backend.calls
    assert entailment_item_scores(*args, judge=EntailmentJudge.llm(backend, cache)) == scores
    assert backend.calls == calls  # the same run again asks nothing new
    with pytest.raises(ValueError, match="2 candidates"):
        entailment_item_scores(["q"], ["a", "b"], ["a"], judge=EntailmentJudge(LexicalNLIBackend()))


def test_entailment_metric__is_registered_for_run_benchmark_the_form_and_the_leaderboard() -> None:
    from evaluation.forms import QA_METRIC_CHOICES
    from evaluation.services.leaderboard import METRIC_COLUMNS
    from evaluation.services.runs import JUDGED_METRICS, normalize_metrics, prompt_names

    assert normalize_metrics(["rougeL", "Entailment"]) == ("rouge_l", "entailment")
    assert "entailment" in JUDGED_METRICS
    assert set(ENTAILMENT_KEYS) <= {key for key, _ in METRIC_COLUMNS}
    assert "entailment" in {value for value, _ in QA_METRIC_CHOICES}
    assert {"qa2d", "nli", "inference_steps"} <= set(prompt_names("search", ("entailment",)))
