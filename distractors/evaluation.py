"""Ranking metrics for distractor suggestions: recall@k and mean reciprocal rank of real distractors."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Optional

from distractors.text import normalize

logger = logging.getLogger(__name__)


def ranks_of(ranking: Sequence[str], gold: Sequence[str]) -> list[Optional[int]]:
    """Return the 1-based rank of each gold distractor in a ranking (None when it is absent)."""
    position: dict[str, int] = {}
    for i, expression in enumerate(ranking, start=1):
        position.setdefault(normalize(expression), i)
    return [position.get(normalize(g)) for g in gold]


def recall_at_k(ranks: Sequence[Optional[int]], k: int) -> Optional[float]:
    """Return the fraction of gold items ranked in the top k (None when there is no gold item)."""
    if not ranks:
        return None
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def reciprocal_rank(ranks: Sequence[Optional[int]]) -> float:
    """Return 1 / the best rank of any gold item (0 when none is ranked)."""
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def summarize(per_question: Sequence[Sequence[Optional[int]]], k: int = 6) -> dict[str, Optional[float]]:
    """Average recall@k (over distractors) and MRR (over questions) of many questions' gold ranks."""
    if not per_question:
        return {f"recall@{k}": None, "mrr": None, "questions": 0}
    flat = [r for ranks in per_question for r in ranks]
    mrr = sum(reciprocal_rank(r) for r in per_question) / len(per_question)
    recall = recall_at_k(flat, k)
    return {
        f"recall@{k}": recall,
        "mrr": mrr if not math.isnan(mrr) else None,
        "questions": len(per_question),
        "gold": len(flat),
    }
