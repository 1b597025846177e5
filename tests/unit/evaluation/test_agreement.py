"""Tests for evaluation/agreement.py (expert vs crowd answers: ROUGE-L, Fact-QA, question-type kappa)."""

from __future__ import annotations

from typing import Optional

import pytest
from sklearn.metrics import cohen_kappa_score

from evaluation.agreement import AgreementItem, agreement, type_agreement
from evaluation.metrics import UndefinedMetricWarning, rouge_l_f1

ITEMS = [
    AgreementItem(
        "a", "Is the final exam cumulative?", "Yes", "yes/no", "Yes, it covers all units", "yes/no"
    ),
    AgreementItem(
        "b",
        "When is the midterm?",
        "The midterm is on March 3",
        "single factual",
        "March 3 in class",
        "single factual",
    ),
    AgreementItem(
        "c",
        "Can I pass without the project?",
        "No, the project is 40% of the grade",
        "single reasoning",
        "No, the project is worth 40%",
        "multi reasoning",
    ),
    AgreementItem(
        "d",
        "Who is the TA for lab 9?",
        "No/insufficient information",
        "no answer",
        "No/insufficient information",
        "no answer",
    ),
]


def test_type_agreement__accuracy_kappa_and_confusion() -> None:
    crowd = ["yes/no", "single factual", "single reasoning", "no answer"]
    expert = ["yes/no", "single factual", "multi reasoning", "no answer"]
    result = type_agreement(crowd, expert)
    assert result["accuracy"] == pytest.approx(0.75)
    assert result["kappa"] == pytest.approx(cohen_kappa_score(crowd, expert))
    assert result["kappa"] < result["accuracy"]  # chance-corrected
    assert result["confusion"]["single reasoning"] == {"multi reasoning": 1}


def test_type_agreement__single_label_kappa_is_none_with_warning() -> None:
    with pytest.warns(UndefinedMetricWarning, match="kappa"):
        result = type_agreement(["yes/no", "yes/no"], ["yes/no", "Yes/No"])
    assert result["accuracy"] == 1.0
    assert result["kappa"] is None


def test_type_agreement__length_mismatch_raises() -> None:
    with pytest.raises(ValueError, match="2 crowd types but 1 expert types"):
        type_agreement(["yes/no", "no answer"], ["yes/no"])


def test_agreement__expert_is_prediction_crowd_is_reference() -> None:
    result = agreement(ITEMS, ["rouge_l"])
    expected = rouge_l_f1([i.expert_answer for i in ITEMS], [i.crowd_answer for i in ITEMS])
    assert [result.items[i.id]["rouge_l_f1"] for i in ITEMS] == pytest.approx(expected)
    assert result.metrics["rouge_l_f1"] == pytest.approx(sum(expected) / len(expected))
    assert result.metrics["question_type_accuracy"] == pytest.approx(0.75)
    assert result.metrics["n"] == 4 and result.n == 4
    assert result.items["c"]["type_agrees"] is False and result.items["d"]["type_agrees"] is True
    # Strata follow the crowd's type (the reference), as for the baselines.
    assert result.stratified["question_type"]["single reasoning"] == {"n": 1, "rouge_l_f1": expected[2]}
    assert result.stratified["answer_source"]["insufficient"]["rouge_l_f1"] == pytest.approx(1.0)
    assert result.stratified["answer_source"]["explicit"]["n"] == 2
    assert "bertscore_f1" not in result.metrics


def test_agreement__fact_qa_scorer_is_called_with_expert_as_candidate() -> None:
    calls: list[tuple[list[str], list[str], list[str]]] = []

    def judge(
        questions: list[str], candidates: list[str], references: list[str], **_: object
    ) -> dict[str, list[Optional[float]]]:
        calls.append((list(questions), list(candidates), list(references)))
        precision = [1.0, 0.5, None, 1.0]
        recall = [0.5, 1.0, None, 1.0]
        return {"fact_qa_p": precision, "fact_qa_r": recall, "fact_qa_f": [2 / 3, 2 / 3, None, 1.0]}

    with pytest.warns(UndefinedMetricWarning) as record:
        result = agreement(ITEMS, ["rouge_l"], fact_qa_scorer=judge)
    # Only the strata whose single item is undefined warn; the overall means are defined.
    assert {str(w.message).split(":")[0] for w in record} == {
        f"{m} for {stratum}"
        for m in ("fact_qa_p", "fact_qa_r", "fact_qa_f")
        for stratum in ("type 'single reasoning'", "source 'implicit'")
    }
    assert calls == [
        ([i.question for i in ITEMS], [i.expert_answer for i in ITEMS], [i.crowd_answer for i in ITEMS])
    ]
    assert result.metrics["fact_qa_p"] == pytest.approx(2.5 / 3)  # the undefined item is left out
    assert result.metrics["fact_qa_r"] == pytest.approx(2.5 / 3)
    assert result.items["c"]["fact_qa_p"] is None
    assert result.stratified["question_type"]["single reasoning"]["fact_qa_f"] is None
    assert set(result.to_dict()) == {"n", "metrics", "stratified", "type_confusion", "items"}


def test_agreement__no_items_raises() -> None:
    with pytest.raises(ValueError, match="no expert answers"):
        agreement([], ["rouge_l"])


def test_agreement__duplicate_id_raises() -> None:
    with pytest.raises(ValueError, match="appears twice"):
        agreement([ITEMS[0], ITEMS[0]], ["rouge_l"])
