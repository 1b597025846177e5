"""Every SciQ QC code of annotation/qc/sciq.py, plus a real-data slice."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from annotation.qc.sciq import SciQItem, SciQOptions, check_item

PASSAGE = "Oxidants are compounds that are capable of accepting electrons, such as oxygen or fluorine."
BASE = SciQItem(
    id="s1",
    question="Compounds that are capable of accepting electrons are called what?",
    answer="oxidants",
    passage=PASSAGE,
    distractors=("antioxidants", "residues", "reductants"),
    worker_distractors=("residues",),
)


def test_check_item__clean_item_has_no_flags() -> None:
    result = check_item(BASE)
    assert result.flags == () and result.normalized_answer == "oxidants"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"question": "What accepts electrons?"}, "question_length"),
        ({"question": " ".join(["word"] * 31) + "?"}, "question_length"),
        ({"answer": "compounds capable of accepting electrons", "passage": ""}, "answer_length"),
        (
            {"question": "Is oxygen an example of a compound that accepts electrons?", "answer": "yes"},
            "yes_no_question",
        ),
        (
            {"question": "Are compounds that accept electrons called oxidants in chemistry?"},
            "yes_no_question",
        ),
        ({"answer": "catalysts", "distractors": ("a", "b", "c")}, "answer_not_in_passage"),
        (
            {
                "question": "Oxidants are compounds that are capable of accepting what particles?",
                "answer": "oxidants",
            },
            "answer_in_question",
        ),
        ({"distractors": ("Oxidants", "residues", "reductants")}, "distractor_equals_answer"),
        ({"distractors": ("residues", "Residues", "reductants")}, "duplicate_distractor"),
        ({"distractors": ("residues", "reductants")}, "distractor_count"),
        ({"worker_distractors": ()}, "no_worker_distractor"),
    ],
)
def test_check_item__each_code(changes: dict, code: str) -> None:
    result = check_item(replace(BASE, **changes))
    assert code in result.flags
    expected = "review" if code == "answer_not_in_passage" else "error"  # the HIT only warns about that one
    assert [i.severity for i in result.issues if i.code == code] == [expected]


def test_check_item__alternative_question_is_not_yes_no() -> None:
    item = replace(
        BASE, question="Is a compound that accepts electrons an oxidant or a reductant?", answer="oxidant"
    )
    assert "yes_no_question" not in check_item(item).flags


def test_check_item__joined_words_in_passage_still_match() -> None:
    item = replace(BASE, passage="Such compounds are calledoxidants in chemistry.")
    assert "answer_not_in_passage" not in check_item(item).flags


def test_check_item__stage_one_skips_distractors() -> None:
    item = replace(BASE, distractors=(), worker_distractors=None)
    assert check_item(item, SciQOptions(check_distractors=False)).flags == ()


def test_check_item__real_sciq_slice(shared_data: Callable[[str], Path]) -> None:
    records = json.loads((shared_data("sciq") / "test.json").read_text(encoding="utf-8"))[:200]
    results = [
        check_item(
            SciQItem(
                id=str(i),
                question=r["question"],
                answer=r["correct_answer"],
                passage=r["support"],
                distractors=(r["distractor1"], r["distractor2"], r["distractor3"]),
            )
        )
        for i, r in enumerate(records)
    ]
    flagged = [f for r in results for f in r.flags]
    # Released SciQ items all have 3 distinct distractors different from the answer.
    assert not {"distractor_count", "distractor_equals_answer", "no_worker_distractor"} & set(flagged)
    assert sum(not r.flags for r in results) / len(results) > 0.6
