"""The features phi(q, a*, a') of the distractor ranker (paper §3.2, 'Distractor Model Features').

Each group is listed in ``FEATURE_GROUPS`` with the paper's intuition. Good distractors are (1)
grammatically consistent with the answer, (2) of the same abstract category (chemical elements), and (3)
consistent with the question's semantic context; every group below targets one of these.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein
from spacy.lang.en.stop_words import STOP_WORDS

from distractors.analysis import ExpressionAnalyzer, ExpressionInfo
from distractors.embeddings import WordVectors
from distractors.text import has_number, normalize, tokenize, units_in

logger = logging.getLogger(__name__)

# group name -> why it helps (the paper's intuition). The feature names of each group follow below.
FEATURE_GROUPS: dict[str, str] = {
    "embedding": "bags of word embeddings for q, a*, a' and their cosines: semantic context and category",
    "pos": "POS-tag consistency of a* and a': a noun-phrase answer wants a noun-phrase distractor",
    "number": "singular/plural consistency of a* and a' ('electrons' wants 'protons', not 'proton')",
    "frequency": "log average word frequency of a* and a': distractors are about as common as the answer",
    "levenshtein": "string edit distance a*-a': near-spellings are often plausible (or trivially wrong)",
    "suffix": "suffix consistency of a* and a' (fires for 'regeneration'/'exhaustion')",
    "overlap": "token overlap between q, a* and a': distractors repeating the question are giveaways",
    "length": "token and character lengths of a* and a' and their similarity: options look alike",
    "numeric": "numerical content in q, a*, a' and its consistency: numeric answers want numbers",
    "units": "units of measure in q, a*, a' and shared units ('5 kg' vs '7 kg')",
    "hypernymy": "WordNet hypernymy between tokens of q, a*, a', both ways, one or two steps",
    "kb": "two-step links a* - x - a' in a WordNet meronymy/holonymy knowledge base",
    "concepts": "shared hyponymy of a* and a' to concepts that most often generalise training distractors",
}

HAND_FEATURES: dict[str, tuple[str, ...]] = {
    "embedding": ("cos_a_d", "cos_q_d", "cos_q_a", "d_has_vector", "a_has_vector"),
    "pos": ("pos_head_same", "pos_head_coarse_same", "pos_sequence_same", "d_head_noun", "a_head_noun"),
    "number": ("plural_a", "plural_d", "plural_same"),
    "frequency": ("logfreq_a", "logfreq_d", "logfreq_diff"),
    "levenshtein": ("levenshtein", "levenshtein_similarity"),
    "suffix": ("suffix2_same", "suffix3_same", "suffix4_same"),
    "overlap": ("overlap_a_d", "d_in_q", "a_in_q", "d_contains_a", "a_contains_d", "d_shares_token_with_a"),
    "length": ("ntok_a", "ntok_d", "nchar_a", "nchar_d", "ntok_same", "nchar_ratio"),
    "numeric": ("numeric_q", "numeric_a", "numeric_d", "numeric_same"),
    "units": ("unit_q", "unit_a", "unit_d", "unit_shared_a_d", "unit_shared_q_d"),
    "hypernymy": (
        "d_in_wordnet",
        "d_hypernym_of_a_1",
        "d_hypernym_of_a_2",
        "a_hypernym_of_d_1",
        "a_hypernym_of_d_2",
        "share_hypernym_1",
        "share_hypernym_2",
        "q_hypernym_of_d_1",
        "q_hypernym_of_d_2",
        "q_ancestor_of_d",
        "d_hypernym_of_q",
    ),
    "kb": ("kb_link_1", "kb_link_2"),
}


@dataclass(frozen=True)
class QueryContext:
    """What the features need about (q, a*), computed once per question."""

    question: str
    answer: str
    q_tokens: frozenset[str]
    q_vector: np.ndarray
    a_vector: np.ndarray
    a_info: ExpressionInfo
    q_numeric: bool
    q_units: frozenset[str]
    q_senses: frozenset[Any]
    a_concepts: tuple[bool, ...]


def _cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    if norm == 0:
        return np.zeros(len(matrix), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return (matrix @ vector) / (norms * norm)


class FeatureExtractor:
    """Turn (q, a*, [a'...]) into a feature matrix, one row per candidate a'."""

    def __init__(
        self, vectors: WordVectors, analyzer: ExpressionAnalyzer, concepts: Sequence[str] = ()
    ) -> None:
        """Bind the embeddings, the per-expression analyzer and the mined generalising concepts."""
        self.vectors = vectors
        self.analyzer = analyzer
        self.knowledge = analyzer.knowledge
        self.concepts = tuple(concepts)
        self._concept_synsets = (
            tuple(self.knowledge.wn.synset(name) for name in self.concepts) if self.knowledge else ()
        )
        dim = vectors.dim
        self.feature_names: tuple[str, ...] = (
            tuple(f"q_emb_{i}" for i in range(dim))
            + tuple(f"a_emb_{i}" for i in range(dim))
            + tuple(f"d_emb_{i}" for i in range(dim))
            + tuple(name for names in HAND_FEATURES.values() for name in names)
            + tuple(f"concept_{name}" for name in self.concepts)
            + ("concept_any",)
        )

    def _in_concepts(self, info: ExpressionInfo) -> tuple[bool, ...]:
        closure = info.wordnet.ancestors | info.wordnet.senses
        return tuple(c in closure for c in self._concept_synsets)

    def context(self, question: str, answer: str) -> QueryContext:
        """Compute the per-question part of the features."""
        answer = normalize(answer)
        q_tokens = tokenize(question)
        content = [t for t in q_tokens if t not in STOP_WORDS and t.isalpha()]
        a_info = self.analyzer.info(answer)
        return QueryContext(
            question=question,
            answer=answer,
            q_tokens=frozenset(q_tokens),
            q_vector=self.vectors.bag(q_tokens),
            a_vector=self.vectors.bag(a_info.tokens),
            a_info=a_info,
            q_numeric=has_number(q_tokens),
            q_units=units_in(q_tokens),
            q_senses=self.knowledge.token_senses(content) if self.knowledge else frozenset(),
            a_concepts=self._in_concepts(a_info),
        )

    def matrix(self, question: str, answer: str, candidates: Sequence[str]) -> np.ndarray:
        """Return the (len(candidates), n_features) float32 feature matrix.

        Args:
            question: the question text q.
            answer: the correct answer a*.
            candidates: normalised candidate distractors a'.
        """
        ctx = self.context(question, answer)
        return self.matrix_for(ctx, candidates)

    def matrix_for(self, ctx: QueryContext, candidates: Sequence[str]) -> np.ndarray:
        """Like ``matrix`` with a precomputed QueryContext (for scoring many batches of one question)."""
        n = len(candidates)
        dim = self.vectors.dim
        out = np.zeros((n, len(self.feature_names)), dtype=np.float32)
        if n == 0:
            return out
        self.analyzer.prepare(candidates)
        d_vectors = self.vectors.bags(candidates)
        out[:, 0:dim] = ctx.q_vector
        out[:, dim : 2 * dim] = ctx.a_vector
        out[:, 2 * dim : 3 * dim] = d_vectors
        col = 3 * dim
        cos_a_d = _cosines(d_vectors, ctx.a_vector)
        cos_q_d = _cosines(d_vectors, ctx.q_vector)
        a_norm = float(np.linalg.norm(ctx.a_vector))
        q_norm = float(np.linalg.norm(ctx.q_vector))
        cos_q_a = float(ctx.q_vector @ ctx.a_vector / (q_norm * a_norm)) if q_norm and a_norm else 0.0
        lev = process.cdist([ctx.answer], list(candidates), scorer=Levenshtein.distance)[0]
        lev_sim = process.cdist([ctx.answer], list(candidates), scorer=Levenshtein.normalized_similarity)[0]
        d_has_vector = np.any(d_vectors != 0, axis=1)
        a = ctx.a_info
        a_tokens = set(a.tokens)
        a_wn = a.wordnet
        rows = []
        for i, candidate in enumerate(candidates):
            d = self.analyzer.info(candidate)
            d_wn = d.wordnet
            d_tokens = set(d.tokens)
            union = a_tokens | d_tokens
            rows.append(
                self._hand_row(
                    ctx,
                    a,
                    d,
                    a_tokens,
                    d_tokens,
                    union,
                    a_wn,
                    d_wn,
                    cos_a_d[i],
                    cos_q_d[i],
                    cos_q_a,
                    bool(d_has_vector[i]),
                    a_norm > 0,
                    lev[i],
                    lev_sim[i],
                )
            )
        hand = np.asarray(rows, dtype=np.float32)
        out[:, col : col + hand.shape[1]] = hand
        return out

    def _hand_row(self, ctx, a, d, a_tokens, d_tokens, union, a_wn, d_wn, cos_ad, cos_qd, cos_qa,
                  d_vec, a_vec, lev, lev_sim) -> list[float]:  # fmt: skip
        a_text, d_text = a.text, d.text
        d_concepts = self._in_concepts(d) if self._concept_synsets else ()
        shared_concepts = [x and y for x, y in zip(ctx.a_concepts, d_concepts, strict=False)]
        a_head, d_head = a.head_tag, d.head_tag
        row = [
            # embedding
            cos_ad, cos_qd, cos_qa, d_vec, a_vec,
            # pos
            a_head == d_head and a_head != "", a_head[:2] == d_head[:2] and a_head != "",
            a.tags == d.tags, d_head.startswith("NN"), a_head.startswith("NN"),
            # number
            a.plural, d.plural, a.plural == d.plural,
            # frequency
            a.log_freq, d.log_freq, abs(a.log_freq - d.log_freq),
            # levenshtein
            lev, lev_sim,
            # suffix
            a_text[-2:] == d_text[-2:], a_text[-3:] == d_text[-3:], a_text[-4:] == d_text[-4:],
            # overlap
            len(a_tokens & d_tokens) / len(union) if union else 0.0,
            len(d_tokens & ctx.q_tokens) / len(d_tokens) if d_tokens else 0.0,
            len(a_tokens & ctx.q_tokens) / len(a_tokens) if a_tokens else 0.0,
            a_text in d_text, d_text in a_text, bool(a_tokens & d_tokens),
            # length
            a.n_tokens, d.n_tokens, a.n_chars, d.n_chars, a.n_tokens == d.n_tokens,
            min(a.n_chars, d.n_chars) / max(a.n_chars, d.n_chars, 1),
            # numeric
            ctx.q_numeric, a.numeric, d.numeric, a.numeric == d.numeric,
            # units
            bool(ctx.q_units), bool(a.units), bool(d.units),
            bool(a.units & d.units), bool(ctx.q_units & d.units),
            # hypernymy
            bool(d_wn.senses),
            bool(d_wn.senses & a_wn.hyper1), bool(d_wn.senses & a_wn.hyper2),
            bool(a_wn.senses & d_wn.hyper1), bool(a_wn.senses & d_wn.hyper2),
            bool(a_wn.hyper1 & d_wn.hyper1), bool(a_wn.hyper2 & d_wn.hyper2),
            bool(ctx.q_senses & d_wn.hyper1), bool(ctx.q_senses & d_wn.hyper2),
            bool(ctx.q_senses & d_wn.ancestors), bool(d_wn.senses & self._q_hyper(ctx)),
            # kb
            bool(d_wn.senses & a_wn.kb1), bool(a_wn.kb1 & d_wn.kb1),
        ]  # fmt: skip
        row.extend(shared_concepts)
        row.append(any(shared_concepts))
        return row

    def _q_hyper(self, ctx: QueryContext) -> frozenset[Any]:
        """Return the two-step hypernyms of the question's nouns (cached on the context object)."""
        cached: Optional[frozenset[Any]] = ctx.__dict__.get("_q_hyper")
        if cached is None:
            hyper: set[Any] = set()
            for synset in ctx.q_senses:
                for h in synset.hypernyms():
                    hyper.add(h)
                    hyper.update(h.hypernyms())
            cached = frozenset(hyper)
            object.__setattr__(ctx, "_q_hyper", cached)
        return cached
