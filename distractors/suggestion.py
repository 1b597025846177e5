"""The result type shared by every distractor suggester, and the interface they implement."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Optional, Protocol


@dataclass(frozen=True)
class Suggestion:
    """One suggested distractor: its text, a score in [0, 1] (higher is better) and its 1-based rank."""

    text: str
    score: float
    rank: int

    def to_dict(self) -> dict[str, object]:
        """Return ``{"text", "score", "rank"}`` (the suggest_distractors JSON shape)."""
        return asdict(self)


class Suggester(Protocol):
    """Anything that proposes distractors for a (question, answer) pair."""

    name: str

    def suggest(self, question: str, answer: str, top: int = 6) -> list[Suggestion]:
        """Return the ``top`` best distractors, best first."""
        ...


BulkProgress = Callable[[int, int], None]


def suggest_many(
    suggester: Suggester,
    pairs: Iterable[tuple[str, str]],
    top: int = 6,
    progress: Optional[BulkProgress] = None,
    total: Optional[int] = None,
) -> list[list[Suggestion]]:
    """Suggest distractors for many (question, answer) pairs, reporting progress after each one.

    Args:
        suggester: a trained ranker or a fallback.
        pairs: (question, answer) pairs.
        top: suggestions per pair.
        progress: called as progress(done, total) after each pair.
        total: the number of pairs, when ``pairs`` is a generator (for progress only).

    Returns:
        One list of suggestions per pair, in input order.
    """
    items = list(pairs)
    count = total if total is not None else len(items)
    out: list[list[Suggestion]] = []
    for i, (question, answer) in enumerate(items, start=1):
        out.append(suggester.suggest(question, answer, top=top))
        if progress:
            progress(i, count)
    return out
