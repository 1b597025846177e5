"""Simulated SciQ stage-2 validators of known reliability, for tests and benchmarks of aggregation.

Why a simulation: aggregation methods can only be compared against a known truth, and a real collection
never has one. The questions are real (SciQ's), the truth is known by construction: a real SciQ question
with its own answer is exam-worthy (``accept``); the same question with another question's answer is a
false answer (``reject``), the most common reason a stage-2 validator flags a pair. Workers are drawn from
four kinds that crowd-work studies describe:

* ``careful``: right with probability ``accuracy`` (0.9 to 0.97);
* ``careless``: right a little more often than chance (0.6 to 0.75);
* ``spammer``: answers ``accept`` whatever the item (the "everything is fine" clicker);
* ``adversarial``: mostly wrong on purpose (accuracy 0.1 to 0.25).

Nothing here imports Django; random draws come from one seeded :class:`random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from crowd.aggregation import ACCEPT, REJECT, Judgement

CAREFUL = "careful"
CARELESS = "careless"
SPAMMER = "spammer"
ADVERSARIAL = "adversarial"
KINDS: tuple[str, ...] = (CAREFUL, CARELESS, SPAMMER, ADVERSARIAL)
ACCURACY: dict[str, tuple[float, float]] = {
    CAREFUL: (0.90, 0.97),
    CARELESS: (0.60, 0.75),
    ADVERSARIAL: (0.10, 0.25),
}
"""Range each kind's per-worker accuracy is drawn from (a spammer's depends on the item mix)."""


@dataclass(frozen=True)
class SimWorker:
    """One simulated worker: ``accuracy`` is None for a spammer, who always answers ``always``."""

    name: str
    kind: str
    accuracy: float | None
    always: str = ACCEPT

    def label(self, truth: str, rng: random.Random) -> str:
        """This worker's label for an item whose true label is ``truth``."""
        if self.accuracy is None:
            return self.always
        if rng.random() < self.accuracy:
            return truth
        return REJECT if truth == ACCEPT else ACCEPT


@dataclass(frozen=True)
class SimItem:
    """A question shown for validation and its true verdict."""

    id: str
    question: str
    answer: str
    truth: str


def make_crowd(mix: dict[str, int], seed: int = 0) -> list[SimWorker]:
    """Workers of each kind in ``mix`` (kind -> count), accuracies drawn from :data:`ACCURACY`."""
    rng = random.Random(seed)
    workers = []
    for kind in KINDS:
        for i in range(mix.get(kind, 0)):
            if kind == SPAMMER:
                accuracy = None
            else:
                low, high = ACCURACY[kind]
                accuracy = round(rng.uniform(low, high), 3)
            workers.append(SimWorker(f"{kind}-{i:02d}", kind, accuracy))
    return workers


def sciq_items(
    questions: Sequence[tuple[str, str, str]], bad_share: float = 0.3, seed: int = 0
) -> list[SimItem]:
    """Validation items from real questions ``(id, question, answer)``: a ``bad_share`` of them get
    another question's answer (a false answer, truth ``reject``), the rest keep their own (``accept``)."""
    rng = random.Random(seed)
    answers = [answer for _, _, answer in questions]
    items = []
    for qid, question, answer in questions:
        if rng.random() < bad_share:
            wrong = answer
            while wrong.strip().casefold() == answer.strip().casefold():
                wrong = rng.choice(answers)
            items.append(SimItem(f"{qid}-false", question, wrong, REJECT))
        else:
            items.append(SimItem(qid, question, answer, ACCEPT))
    return items


def simulate(
    items: Sequence[SimItem],
    workers: Sequence[SimWorker],
    k: int = 3,
    seed: int = 0,
    workload: dict[str, float] | None = None,
) -> list[Judgement]:
    """Each item judged by ``k`` distinct workers, drawn with weights ``workload`` (kind -> relative
    number of HITs a worker of that kind takes; spammers are fast, so they take more).

    Raises:
        ValueError: ``k`` larger than the crowd.
    """
    if k > len(workers):
        raise ValueError(f"k={k} validators per item but only {len(workers)} workers")
    rng = random.Random(seed)
    weights = [(workload or {}).get(w.kind, 1.0) for w in workers]
    judgements = []
    for item in items:
        chosen: list[SimWorker] = []
        while len(chosen) < k:
            worker = rng.choices(workers, weights)[0]
            if worker not in chosen:
                chosen.append(worker)
        judgements.extend(Judgement(item.id, w.name, w.label(item.truth, rng)) for w in chosen)
    return judgements


def accuracy(verdicts: dict[str, str], items: Sequence[SimItem]) -> float:
    """Share of items whose aggregated verdict equals the truth (an item without a verdict is wrong)."""
    return sum(verdicts.get(item.id) == item.truth for item in items) / len(items) if items else 0.0
