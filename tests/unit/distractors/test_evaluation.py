import pytest

from distractors.evaluation import ranks_of, recall_at_k, reciprocal_rank, summarize


def test_ranks_of__normalised_match_and_missing():
    assert ranks_of(["oxygen", "Hydrogen", "soil"], ["hydrogen", "calcium"]) == [2, None]


def test_recall_at_k__counts_ranks_within_k():
    assert recall_at_k([1, 7, None], 6) == pytest.approx(1 / 3)
    assert recall_at_k([], 6) is None


def test_reciprocal_rank__best_rank_or_zero():
    assert reciprocal_rank([4, 2, None]) == 0.5
    assert reciprocal_rank([None]) == 0.0


def test_summarize__averages_over_questions():
    out = summarize([[1, None, None], [None, 3, 10]], k=6)
    assert out["recall@6"] == pytest.approx(2 / 6)
    assert out["mrr"] == pytest.approx((1 + 1 / 3) / 2)
    assert out["questions"] == 2
