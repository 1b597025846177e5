"""Tests for crowd/aggregation.py and crowd/simulation.py: real SciQ questions, simulated validators of
known reliability (careful, careless, spammers, adversarial), aggregated through crowd-kit."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.importers.mcq import read_sciq
from crowd.aggregation import (
    ACCEPT,
    DAWID_SKENE,
    MACE_METHOD,
    MAJORITY,
    METHODS,
    REJECT,
    AggregationError,
    Judgement,
    aggregate,
    krippendorff_alpha,
    parse_judgements,
    validation_label,
)
from crowd.simulation import (
    ADVERSARIAL,
    CAREFUL,
    CARELESS,
    SPAMMER,
    accuracy,
    make_crowd,
    sciq_items,
    simulate,
)


@functools.lru_cache(maxsize=1)
def _questions(root: Path) -> list[tuple[str, str, str]]:
    return [(r.id, r.question, r.answer) for r in read_sciq(root)[:1200]]


@pytest.fixture
def sciq_questions(shared_data: Callable[[str], Path]) -> list[tuple[str, str, str]]:
    return _questions(shared_data("sciq"))


def _verdicts(result) -> dict[str, str]:  # noqa: ANN001 - an Aggregation
    return {item: v.label for item, v in result.items.items()}


def test_aggregate__mixed_crowd_dawid_skene_beats_majority_and_finds_bad_workers(sciq_questions) -> None:
    items = sciq_items(sciq_questions, bad_share=0.3, seed=3)
    crowd = make_crowd({CAREFUL: 12, CARELESS: 8, SPAMMER: 6, ADVERSARIAL: 2}, seed=3)
    judgements = simulate(items, crowd, k=3, seed=3, workload={SPAMMER: 2.0})
    results = {m: aggregate(judgements, m) for m in METHODS}
    scores = {m: accuracy(_verdicts(r), items) for m, r in results.items()}
    assert scores[DAWID_SKENE] >= scores[MAJORITY] + 0.01, scores
    ds = results[DAWID_SKENE]
    assert set(ds.items) == {i.id for i in items}
    assert all(0.5 <= v.confidence <= 1.0 and v.votes == 3 for v in ds.items.values())
    assert sum(w.n for w in ds.workers.values()) == len(judgements) == 3 * len(items)
    kinds = {w.name: w.kind for w in crowd}
    blocked = set(ds.below(0.6, min_labels=20))
    assert {w for w, k in kinds.items() if k in (SPAMMER, ADVERSARIAL)} <= blocked
    assert not {w for w in blocked if kinds[w] == CAREFUL}
    careful = [ds.workers[w].skill for w, k in kinds.items() if k == CAREFUL]
    spammers = [ds.workers[w].skill for w, k in kinds.items() if k == SPAMMER]
    assert min(careful) > max(spammers)
    mace = results[MACE_METHOD]
    assert all(0.0 <= s.skill <= 1.0 for s in mace.workers.values())
    assert ds.alpha is not None and -1.0 <= ds.alpha < 0.6  # spammers and adversaries drag agreement down


def test_aggregate__uniform_careful_crowd_dawid_skene_never_half_a_point_below_majority(
    sciq_questions,
) -> None:
    items = sciq_items(sciq_questions, bad_share=0.3, seed=5)
    for mix in ({CAREFUL: 15}, {CARELESS: 15}):
        judgements = simulate(items, make_crowd(mix, seed=5), k=3, seed=5)
        majority = accuracy(_verdicts(aggregate(judgements, MAJORITY)), items)
        ds = accuracy(_verdicts(aggregate(judgements, DAWID_SKENE)), items)
        assert ds >= majority - 0.005, (mix, ds, majority)


def test_aggregate__single_judgements_unknown_method_and_repeats() -> None:
    single = aggregate([Judgement("q1", "w1", REJECT)], MAJORITY)
    assert single.items["q1"].label == REJECT and single.workers["w1"].n == 1
    assert aggregate([], DAWID_SKENE).to_dict() == {
        "method": DAWID_SKENE,
        "labels": 0,
        "alpha": None,
        "items": {},
        "workers": {},
    }
    with pytest.raises(AggregationError, match="unknown method 'glad'"):
        aggregate([Judgement("q1", "w1", ACCEPT)], "glad")
    with pytest.raises(AggregationError, match="worker 'w1' judged item 'q1' 2 times"):
        aggregate([Judgement("q1", "w1", ACCEPT), Judgement("q1", "w1", REJECT)], MAJORITY)


def test_parse_judgements__names_line_and_field() -> None:
    good = [
        '{"item": "q1", "worker": "w1", "label": "accept"}',
        "",
        '{"item": 7, "worker": "w2", "label": "x"}',
    ]
    assert parse_judgements(good) == [Judgement("q1", "w1", "accept"), Judgement("7", "w2", "x")]
    cases = [
        ("{not json", "f.jsonl line 1: not JSON"),
        ("[1, 2]", "f.jsonl line 1: expected a JSON object"),
        (
            '{"item": "q", "worker": "w"}',
            "f.jsonl line 1: field 'label' must be a non-empty string, got None",
        ),
        ('{"item": "q", "worker": true, "label": "a"}', "field 'worker' must be a non-empty string"),
        ('{"item": " ", "worker": "w", "label": "a"}', "field 'item' must be a non-empty string"),
    ]
    for line, message in cases:
        with pytest.raises(AggregationError, match=message):
            parse_judgements([line], where="f.jsonl")
    twice = ['{"item": "q", "worker": "w", "label": "a"}'] * 2
    with pytest.raises(AggregationError, match="line 2: worker 'w' already judged item 'q' on line 1"):
        parse_judgements(twice)


def test_krippendorff_alpha__perfect_none_and_validation_labels() -> None:
    perfect = [Judgement(f"q{i}", w, ACCEPT if i % 2 else REJECT) for i in range(6) for w in ("a", "b")]
    assert krippendorff_alpha(perfect) == pytest.approx(1.0)
    assert krippendorff_alpha([Judgement("q", w, ACCEPT) for w in ("a", "b")]) is None
    assert krippendorff_alpha([Judgement("q", "a", ACCEPT)]) is None
    assert validation_label([]) == ACCEPT and validation_label(["false_answer"]) == REJECT
