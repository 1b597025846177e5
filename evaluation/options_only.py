"""The SciQ artifact check: can a model answer a multiple-choice item from its options alone?

SciQ's paper (papers/sciq-crowdsourcing-mcq.txt) warns that poor distractors make a question trivial: an
option that is the only plausible word for the question gives the answer away without the passage. The
check is lm-evaluation-harness's SciQ scoring with no passage
(:func:`evaluation.mcq.choose_by_loglikelihood`): each option is scored as the continuation of the
question; the item is *answered* when the correct answer wins both by total log-likelihood and per
character (a lucky pick by one measure alone is common with four options). A weak model (the default
SmolLM2-135M) makes this a screening signal for a researcher's review, never a rejection. No Django here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.mcq import LogLikelihoods, MCQItem, choose_by_loglikelihood


@dataclass(frozen=True)
class OptionsOnlyResult:
    """What the model chose for one item (option 0 is the correct answer)."""

    options: tuple[str, ...]
    scores: tuple[float, ...]
    chosen: int
    chosen_per_char: int
    latency_s: float

    @property
    def answered(self) -> bool:
        """The correct answer won by both measures: the options give the item away."""
        return self.chosen == 0 and self.chosen_per_char == 0


def check_item(
    question: str, answer: str, distractors: Sequence[str], loglikelihoods: LogLikelihoods
) -> OptionsOnlyResult:
    """Score the correct answer and the distractors after the question alone.

    Raises:
        ValueError: no distractor, or an empty question or answer.
    """
    options = tuple(o.strip() for o in (answer, *distractors))
    if not question.strip() or not options[0] or len(options) < 2 or not all(options):
        raise ValueError("an options-only check needs a question, its answer and at least one distractor")
    started = time.perf_counter()
    item = MCQItem(id="item", question=question, options=options, answer_index=0)
    choice = choose_by_loglikelihood([item], loglikelihoods)[0]
    if choice.index is None or choice.norm_index is None:
        raise ValueError("log-likelihood scoring chose no option")
    return OptionsOnlyResult(
        options=options,
        scores=choice.scores,
        chosen=choice.index,
        chosen_per_char=choice.norm_index,
        latency_s=time.perf_counter() - started,
    )
