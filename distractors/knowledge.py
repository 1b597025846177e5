"""WordNet knowledge for distractor features: senses, hypernym levels, a relation KB, generalising concepts.

Intuition (paper §3.2): hypernymy and knowledge-base links reveal sibling structures of the answer a* and a
distractor a'. If a* is *heart*, a plausible a' like *liver* shares the hyponymy relation to *organ*.

The paper's knowledge base held OpenIE triples from Simple Wikipedia pages about anatomy. We have no such
triples offline, so our KB is built from WordNet's part / member / substance meronymy and holonymy
relations between noun synsets (e.g. heart -part of-> circulatory system <-part of- artery).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

# WordNet orders senses by tagged frequency; rarer senses mostly add noise (heart -> playing card).
MAX_SENSES = 3
# Generalising concepts must be at least this deep, so 'entity' or 'physical entity' never count.
MIN_CONCEPT_DEPTH = 4


@dataclass(frozen=True)
class SenseInfo:
    """WordNet facts about one expression, over its first noun senses."""

    senses: frozenset[Any]
    hyper1: frozenset[Any]
    hyper2: frozenset[Any]
    ancestors: frozenset[Any]
    kb1: frozenset[Any]


EMPTY_SENSES = SenseInfo(frozenset(), frozenset(), frozenset(), frozenset(), frozenset())


def _hypernyms(synset: Any) -> list[Any]:
    """Return class and instance hypernyms (nitrogen is a class; 'Mars' is an instance of planet)."""
    return synset.hypernyms() + synset.instance_hypernyms()


def _kb_relations(synset: Any) -> list[Any]:
    """Return the meronym/holonym neighbours of a synset: the edges of our WordNet knowledge base."""
    return (
        synset.part_meronyms()
        + synset.part_holonyms()
        + synset.member_meronyms()
        + synset.member_holonyms()
        + synset.substance_meronyms()
        + synset.substance_holonyms()
    )


class WordNetKnowledge:
    """Cached WordNet look-ups keyed by normalised expression."""

    def __init__(self, wordnet: Any, max_senses: int = MAX_SENSES) -> None:
        """Wrap a loaded NLTK WordNet reader (``distractors.wordnet_loader.load_wordnet``)."""
        self.wn = wordnet
        self.max_senses = max_senses
        self._cache: dict[str, SenseInfo] = {}
        self._ancestors: dict[Any, frozenset[Any]] = {}

    def preload(self) -> int:
        """Read every noun synset into NLTK's synset cache now, and return how many there are.

        NLTK parses a synset from ``data.noun`` the first time it is asked for; a suggestion touches
        hundreds of new candidates, so without this the first questions pay for that parsing (about 0.15 s
        each on the project machine). Reading all 82,115 noun synsets once takes about 10 s.
        """
        return sum(1 for _ in self.wn.all_synsets("n"))

    def noun_senses(self, expression: str) -> list[Any]:
        """Return the first noun senses of an expression, falling back to its head (last) word.

        WordNet's own morphology maps plurals to lemmas ('electrons' -> electron).
        """
        senses = self.wn.synsets(expression.replace(" ", "_"), pos="n")
        if not senses and " " in expression:
            senses = self.wn.synsets(expression.rsplit(" ", 1)[-1], pos="n")
        return senses[: self.max_senses]

    def ancestors_of(self, synset: Any) -> frozenset[Any]:
        """Return every (instance) hypernym above a synset, cached."""
        cached = self._ancestors.get(synset)
        if cached is None:
            cached = frozenset(synset.closure(_hypernyms))
            self._ancestors[synset] = cached
        return cached

    def info(self, expression: str) -> SenseInfo:
        """Return the (cached) SenseInfo of an expression."""
        cached = self._cache.get(expression)
        if cached is not None:
            return cached
        senses = self.noun_senses(expression)
        if not senses:
            self._cache[expression] = EMPTY_SENSES
            return EMPTY_SENSES
        hyper1 = {h for s in senses for h in _hypernyms(s)}
        hyper2 = hyper1 | {h2 for h in hyper1 for h2 in _hypernyms(h)}
        ancestors: set[Any] = set()
        for s in senses:
            ancestors |= self.ancestors_of(s)
        kb1 = {n for s in senses for n in _kb_relations(s)}
        info = SenseInfo(
            frozenset(senses), frozenset(hyper1), frozenset(hyper2), frozenset(ancestors), frozenset(kb1)
        )
        self._cache[expression] = info
        return info

    def token_senses(self, tokens: Iterable[str]) -> frozenset[Any]:
        """Return the noun senses of several tokens (used for the question's words)."""
        out: set[Any] = set()
        for token in tokens:
            out.update(self.noun_senses(token))
        return frozenset(out)

    def siblings(self, expression: str, two_step: bool = False, limit: int = 2000) -> list[str]:
        """Return co-hyponyms of the expression ('liver' for 'heart'), one name per synset.

        Args:
            expression: a normalised expression.
            two_step: also walk from the two-step hypernyms (cousins), not only the direct ones.
            limit: stop after this many names.
        """
        info = self.info(expression)
        parents = sorted(info.hyper2 if two_step else info.hyper1, key=lambda s: s.name())
        out: dict[str, None] = {}
        for parent in parents:
            for child in parent.hyponyms() + parent.instance_hyponyms():
                # The first lemma names the synset ('indium', not its symbol 'In').
                name = child.lemma_names()[0].replace("_", " ").lower()
                if len(name) > 2 and not any(ch.isdigit() for ch in name):
                    out[name] = None
                if len(out) >= limit:
                    return list(out)
        return list(out)


def mine_generalising_concepts(
    knowledge: WordNetKnowledge, distractor_sets: Sequence[Sequence[str]], top_k: int = 30
) -> list[str]:
    """Find the WordNet concepts that most often generalise all distractors of a training question.

    For each question, the concepts that are ancestors of every one of its distractors are counted; the
    ``top_k`` most frequent specific ones (depth >= MIN_CONCEPT_DEPTH) are returned, e.g. chemical
    element, organ, organism.

    Args:
        knowledge: the WordNet wrapper.
        distractor_sets: the normalised distractors of each training question.
        top_k: how many concepts to keep.

    Returns:
        Synset names ('organ.n.01'), most frequent first; equally frequent ones by name.
    """
    counts: Counter[Any] = Counter()
    for distractors in distractor_sets:
        common = None
        for distractor in distractors:
            info = knowledge.info(distractor)
            closure = info.ancestors | info.senses
            common = closure if common is None else common & closure
            if not common:
                break
        if common:
            # Keep the most specific shared concepts: 'chemical element' rather than also 'substance'.
            covered = set().union(*(knowledge.ancestors_of(c) for c in common))
            counts.update(c for c in common if c not in covered)
    # Ties are broken by synset name: Counter.most_common keeps insertion order, which here is the
    # iteration order of a frozenset of synsets and so changes with PYTHONHASHSEED.
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0].name()))
    concepts = [s for s, _ in ranked if s.min_depth() >= MIN_CONCEPT_DEPTH][:top_k]
    logger.info("generalising concepts: %s", [s.name() for s in concepts[:10]])
    return [s.name() for s in concepts]
