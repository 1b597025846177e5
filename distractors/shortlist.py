"""Stage 1 of the two-stage ranker: cheap candidate generation from the full candidate set.

Scoring all ~400K expressions of C with the forest takes about a minute per question; the forest's top
choices are almost always semantically close to the answer, so we first collect a few hundred candidates
from sources that find exactly those: embedding nearest neighbours of a* (and of q + a*), WordNet siblings
and cousins of a*, distractors seen with the same answer in training, and unigram swaps of a multi-word
answer with the nearest neighbours of each of its words.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from distractors.candidates import unigram_swaps
from distractors.embeddings import NeighbourIndex
from distractors.knowledge import WordNetKnowledge
from distractors.text import is_answer_variant, normalize, tokenize

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShortlistConfig:
    """How many candidates each stage-1 source contributes.

    The defaults (about 400 candidates a question) were chosen by benchmarks/distractor_speed.py on 300
    SciQ test questions: against the earlier 1500/300/400/60 (about 1,650 candidates) they rank the real
    distractors better (recall@6 0.202 vs 0.184, MRR 0.267 vs 0.239, recall@50 equal at 0.386): a longer
    shortlist mostly adds candidates the forest over-rates. A suggestion then takes 0.12 s of CPU at the
    median instead of 0.27 s.
    """

    answer_neighbours: int = 300
    context_neighbours: int = 60
    sibling_limit: int = 100
    swap_neighbours: int = 20


DEFAULT_SHORTLIST = ShortlistConfig()


class CandidateGenerator:
    """Collect a shortlist of candidates for (q, a*) from the full candidate set."""

    def __init__(
        self,
        index: NeighbourIndex,
        unigram_index: NeighbourIndex,
        knowledge: WordNetKnowledge,
        seen_distractors: Mapping[str, Sequence[str]],
        config: ShortlistConfig = DEFAULT_SHORTLIST,
    ) -> None:
        """Bind neighbour indexes over C and its unigrams, WordNet, and answer -> training distractors."""
        self.index = index
        self.unigram_index = unigram_index
        self.knowledge = knowledge
        self.seen = seen_distractors
        self.config = config

    def swaps(self, answer: str, per_token: int) -> list[str]:
        """Return unigram swaps of a multi-word answer with each word's nearest unigrams."""
        tokens = answer.split(" ")
        if len(tokens) < 2:
            return []
        vectors = self.unigram_index.vectors
        replacements = {
            i: [w for w, _ in self.unigram_index.nearest(vectors.bag([t]), per_token)]
            for i, t in enumerate(tokens)
        }
        return unigram_swaps(answer, replacements)

    def generate(self, question: str, answer: str) -> list[str]:
        """Return the distinct shortlisted candidates (answer variants removed), in source order."""
        cfg = self.config
        a = normalize(answer)
        vectors = self.index.vectors
        a_vec = vectors.bag(tokenize(a))
        out: dict[str, None] = {}
        for text in self.seen.get(a, ()):
            out[text] = None
        for text, _ in self.index.nearest(a_vec, cfg.answer_neighbours):
            out[text] = None
        q_vec = vectors.bag(tokenize(question))
        if q_vec.any() and a_vec.any():
            mixed = a_vec / np.linalg.norm(a_vec) + q_vec / np.linalg.norm(q_vec)
            for text, _ in self.index.nearest(mixed, cfg.context_neighbours):
                out[text] = None
        for text in self.knowledge.siblings(a, two_step=True, limit=cfg.sibling_limit):
            out[text] = None
        for text in self.swaps(a, cfg.swap_neighbours):
            out[text] = None
        return [text for text in out if not is_answer_variant(a, text)]
