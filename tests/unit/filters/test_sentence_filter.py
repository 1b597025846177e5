"""Passage acceptance of filters/sentence_filter.py, and a real-data slice of SciQ."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from filters.sentence_filter import judge_passage, judge_passages
from filters.sentence_rules import RULE_CODES, FilterOptions

GOOD = "Ocean currents transfer heat from the Equator toward the poles."
GOOD2 = "The plasma membrane is formed by a phospholipid bilayer in every cell."
BAD = "They need a moist environment to survive."


def test_judge_passage__splits_and_reports_sentences() -> None:
    verdict = judge_passage(f"{GOOD} {BAD} {GOOD2}")
    assert [s.text for s in verdict.sentences] == [GOOD, BAD, GOOD2]
    assert [s.accepted for s in verdict.sentences] == [True, False, True]
    assert verdict.accepted_count == 2
    assert verdict.rule_counts == {"starts_with_pronoun": 1}
    assert verdict.accepted and verdict.reasons == ()


def test_judge_passage__names_found_in_passage_sentences() -> None:
    # NER runs only on docs with a name candidate; the passage path must still read its entities.
    name = "Charles Darwin proposed the theory of evolution by natural selection."
    verdict = judge_passage(f"{GOOD} {name}")
    assert [s.rules for s in verdict.sentences] == [(), ("first_name",)]


def test_judge_passage__too_few_accepted_sentences() -> None:
    verdict = judge_passage(f"{GOOD} {BAD}", FilterOptions(min_accepted_sentences=2))
    assert not verdict.accepted
    assert verdict.reasons == ("too_few_accepted_sentences",)


def test_judge_passage__accepted_fraction() -> None:
    verdict = judge_passage(f"{GOOD} {BAD} {BAD}", FilterOptions(min_accepted_fraction=0.5))
    assert not verdict.accepted
    assert "too_small_accepted_fraction" in verdict.reasons


def test_judge_passage__empty_text() -> None:
    verdict = judge_passage("   ")
    assert not verdict.accepted
    assert verdict.reasons == ("no_sentences",)


def test_judge_passages__real_sciq_slice(shared_data: Callable[[str], Path]) -> None:
    records = json.loads((shared_data("sciq") / "valid.json").read_text(encoding="utf-8"))
    supports = [r["support"] for r in records if r["support"].strip()][:40]
    verdicts = list(judge_passages(supports))
    assert len(verdicts) == 40
    sentences = [s for v in verdicts for s in v.sentences]
    assert len(sentences) > 80
    fired = {code for s in sentences for code in s.rules}
    assert fired <= set(RULE_CODES)
    # Textbook prose is mostly plain statements: a real share passes, a real share is rejected.
    accepted = sum(s.accepted for s in sentences) / len(sentences)
    assert 0.2 < accepted < 0.9
    assert sum(v.accepted for v in verdicts) >= 20
