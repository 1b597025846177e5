"""crowd/gold.py: grading, the warn/block decision, serving rates, item sources (real SciQ); no database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.importers.mcq import read_sciq
from crowd.aggregation import ACCEPT, REJECT
from crowd.gold import (
    ATTENTION,
    ATTENTION_FLAG,
    BLOCKED,
    GOLD,
    OK,
    WARNED,
    GoldError,
    Thresholds,
    attention_items,
    due,
    grade,
    read_gold_file,
    sciq_gold,
    standing,
)


def test_grade__gold_by_label_attention_by_exact_flags() -> None:
    assert grade(GOLD, {"label": ACCEPT}, []).passed
    assert not grade(GOLD, {"label": ACCEPT}, ["ungrammatical"]).passed
    assert grade(GOLD, {"label": REJECT}, ["false_answer"]).passed
    assert grade(GOLD, {"label": REJECT}, ["too_specific"]).passed  # any flag rejects, as aggregated
    assert not grade(GOLD, {"label": REJECT}, []).passed
    expected = {"flags": [ATTENTION_FLAG]}
    assert grade(ATTENTION, expected, [ATTENTION_FLAG]).passed
    assert not grade(ATTENTION, expected, []).passed
    assert not grade(ATTENTION, expected, [ATTENTION_FLAG, "false_answer"]).passed
    assert grade(ATTENTION, expected, []).given == "none"
    with pytest.raises(GoldError, match="unknown item kind"):
        grade("trap", {}, [])


LIMITS = Thresholds(warn_below=80, block_below=60, min_answers=5, attention_block=2)


def test_standing__waits_for_min_answers_before_acting() -> None:
    assert standing(4, 0, 0, 0, LIMITS).state == OK  # 0% but only 4 answers
    blocked = standing(5, 2, 0, 0, LIMITS)
    assert (
        blocked.state == BLOCKED and "40% (2/5)" in blocked.reason and "block threshold 60%" in blocked.reason
    )


def test_standing__warns_between_thresholds_and_passes_above() -> None:
    assert standing(10, 7, 0, 0, LIMITS).state == WARNED
    assert standing(10, 8, 0, 0, LIMITS).state == OK
    assert standing(10, 6, 0, 0, LIMITS).state == WARNED  # 60% is not below 60%


def test_standing__one_attention_failure_warns_two_block() -> None:
    one = standing(0, 0, 3, 1, LIMITS)
    assert one.state == WARNED and "1 of 3 attention" in one.reason
    assert standing(0, 0, 3, 2, LIMITS).state == BLOCKED
    assert standing(0, 0, 3, 2, Thresholds(attention_block=0)).state == WARNED  # 0: never blocks


def test_standing__without_thresholds_only_records() -> None:
    record = standing(10, 0, 0, 0, Thresholds())
    assert record.state == OK and record.gold_accuracy == 0.0


def test_thresholds__from_options_defaults() -> None:
    limits = Thresholds.from_options({"gold_block_below": 50})
    assert (limits.block_below, limits.warn_below, limits.min_answers, limits.attention_block) == (
        50,
        None,
        5,
        2,
    )


def test_due__rounds_up_and_never_negative() -> None:
    assert due(1, 0, 10) == 1
    assert due(10, 1, 10) == 0
    assert due(11, 1, 10) == 1
    assert due(20, 0, 25) == 5
    assert due(5, 9, 50) == 0
    assert due(0, 0, 50) == 0 and due(10, 0, 0) == 0


def test_read_gold_file__both_kinds_and_errors_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "gold.jsonl"
    path.write_text(
        '{"question": "What do plants take in?", "answer": "carbon dioxide", "passage": "Plants ...", '
        '"label": "accept"}\n\n'
        '{"question": "Tick only Unrelated.", "answer": "x", "passage": "p", "flags": ["unrelated"]}\n',
        encoding="utf-8",
    )
    specs = read_gold_file(path)
    assert [(s.kind, s.expected) for s in specs] == [
        (GOLD, {"label": ACCEPT}),
        (ATTENTION, {"flags": ["unrelated"]}),
    ]
    assert specs[1].source == "file:gold.jsonl line 3"
    path.write_text('{"question": "q", "answer": "a", "passage": "p", "label": "maybe"}\n', encoding="utf-8")
    with pytest.raises(GoldError, match="gold.jsonl line 1: 'label' must be"):
        read_gold_file(path)
    path.write_text('{"question": "q", "answer": "", "passage": "p", "label": "accept"}\n', encoding="utf-8")
    with pytest.raises(GoldError, match="line 1: 'answer' must be a non-empty string"):
        read_gold_file(path)
    path.write_text("[1]\nnot json\n", encoding="utf-8")
    with pytest.raises(GoldError, match="line 1: expected an object"):
        read_gold_file(path)


def test_sciq_gold__real_sciq_bad_items_show_their_own_distractor(shared_data: Callable[[str], Path]) -> None:
    records = read_sciq(shared_data("sciq"), splits=("test",))
    by_question = {r.question: r for r in records}
    specs = sciq_gold(records, 200, bad_share=0.3, seed=3)
    assert len(specs) == 200 and len({s.source for s in specs}) == 200
    bad = [s for s in specs if s.expected == {"label": REJECT}]
    assert 40 <= len(bad) <= 80
    for spec in specs:
        record = by_question[spec.question]
        assert spec.passage == record.passage and spec.passage.strip()
        if spec.expected["label"] == REJECT:
            assert spec.answer in record.distractors and spec.answer != record.answer
        else:
            assert spec.answer == record.answer
    assert sciq_gold(records, 200, bad_share=0.3, seed=3) == specs  # seeded


def test_attention_items__plain_instruction_on_real_questions(shared_data: Callable[[str], Path]) -> None:
    records = read_sciq(shared_data("sciq"), splits=("test",))
    items = attention_items(records, 5, seed=1)
    assert len(items) == 5
    for item in items:
        assert item.kind == ATTENTION and item.expected == {"flags": [ATTENTION_FLAG]}
        assert "tick only the box “Unrelated to science”" in item.question
