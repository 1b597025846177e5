"""Word embeddings for the distractor model: Word2Vec trained on the platform's corpora, or GloVe.

The paper used bags of GloVe vectors. GloVe cannot be downloaded here, so by default we train gensim's
Word2Vec on the texts the platform holds (SciQ support passages, exam questions, WordNet glosses); a
user-supplied GloVe text file can replace it (``WordVectors.from_glove``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Optional

import numpy as np

from distractors.text import tokenize

logger = logging.getLogger(__name__)


class WordVectors:
    """Token vectors plus the 'bag of embeddings' (mean vector) of an expression."""

    def __init__(self, keyed_vectors) -> None:
        """Wrap a gensim ``KeyedVectors``."""
        self.kv = keyed_vectors
        self.dim: int = int(keyed_vectors.vector_size)
        self._zero = np.zeros(self.dim, dtype=np.float32)

    @classmethod
    def train_word2vec(
        cls,
        sentences: Sequence[list[str]],
        dim: int = 50,
        epochs: int = 5,
        min_count: int = 2,
        seed: int = 13,
        workers: int = 2,
    ) -> WordVectors:
        """Train Word2Vec (skip-gram) on tokenised sentences.

        Args:
            sentences: token lists (use ``distractors.text.tokenize``).
            dim: vector size.
            epochs: passes over the corpus.
            min_count: ignore rarer tokens.
            seed: random seed.
            workers: threads. Only workers=1 is reproducible: with more threads the order in which
                sentences update the shared weights depends on OS scheduling, so two runs with the
                same seed give different vectors (gensim documents this).

        Returns:
            The trained vectors.
        """
        from gensim.models import Word2Vec

        model = Word2Vec(
            sentences=list(sentences),
            vector_size=dim,
            window=5,
            min_count=min_count,
            sg=1,
            epochs=epochs,
            seed=seed,
            workers=workers,
        )
        logger.info("trained Word2Vec: %d tokens in vocabulary, dim %d", len(model.wv), dim)
        return cls(model.wv)

    @classmethod
    def from_glove(cls, path: Path) -> WordVectors:
        """Load a GloVe text file (``word v1 v2 ...`` per line, no header)."""
        from gensim.models import KeyedVectors

        return cls(KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=True))

    @classmethod
    def load(cls, path: Path) -> WordVectors:
        """Load vectors saved by ``save`` (memory-mapped)."""
        from gensim.models import KeyedVectors

        return cls(KeyedVectors.load(str(path), mmap="r"))

    def save(self, path: Path) -> None:
        """Save the vectors in gensim's native format."""
        self.kv.save(str(path))

    def vocabulary(self) -> list[str]:
        """Return the tokens that have a vector."""
        return list(self.kv.index_to_key)

    def __contains__(self, token: str) -> bool:
        return token in self.kv.key_to_index

    def bag(self, tokens: Iterable[str]) -> np.ndarray:
        """Return the mean vector of the known tokens (zeros when none is known)."""
        rows = [self.kv.key_to_index[t] for t in tokens if t in self.kv.key_to_index]
        if not rows:
            return self._zero
        return self.kv.vectors[rows].mean(axis=0)

    def bags(self, expressions: Sequence[str]) -> np.ndarray:
        """Return the bag vectors of many expressions as a (n, dim) float32 matrix."""
        out = np.zeros((len(expressions), self.dim), dtype=np.float32)
        for i, expression in enumerate(expressions):
            out[i] = self.bag(tokenize(expression))
        return out


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to unit length (zero rows stay zero) so dot products are cosines."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)


class NeighbourIndex:
    """Exact cosine nearest neighbours over the bag vectors of a list of expressions.

    A (n, dim) matrix product over ~500K expressions of dim 50 takes a few tens of milliseconds, so no
    approximate index is needed at this size.
    """

    def __init__(self, expressions: Sequence[str], vectors: WordVectors) -> None:
        """Embed every expression that has at least one known token."""
        matrix = vectors.bags(expressions)
        keep = np.flatnonzero(np.any(matrix != 0, axis=1))
        self.expressions: list[str] = [expressions[i] for i in keep]
        self.matrix: np.ndarray = unit_rows(matrix[keep])
        self.vectors = vectors

    def __len__(self) -> int:
        return len(self.expressions)

    def nearest(
        self, query: np.ndarray, k: int, exclude: Optional[set[str]] = None
    ) -> list[tuple[str, float]]:
        """Return up to k (expression, cosine) pairs closest to a query vector, best first.

        Equal cosines (equal bag vectors are common: 'heart', 'heart heart' and any expression whose
        other words have no vector) are ordered by position in the index, and every expression tied
        with the k-th one is considered, so the result does not depend on how ``argpartition`` happens
        to split a tie.
        """
        if not len(self.expressions) or not np.any(query) or k <= 0:
            return []
        q = query / np.linalg.norm(query)
        sims = self.matrix @ q.astype(np.float32)
        k_eff = min(len(sims), k + (len(exclude) if exclude else 0))
        threshold = sims[np.argpartition(-sims, k_eff - 1)[k_eff - 1]]
        top = np.flatnonzero(sims >= threshold)
        top = top[np.lexsort((top, -sims[top]))]
        out = []
        for i in top:
            expression = self.expressions[i]
            if exclude and expression in exclude:
                continue
            out.append((expression, float(sims[i])))
            if len(out) == k:
                break
        return out
