"""BM25 retrieval of syllabus chunks: the search baseline's answers and the RAG baselines' snippets.

Library choice: ``rank-bm25`` (``BM25Okapi``, k1=1.5, b=0.75, epsilon=0.25), because it is exactly what
the SyllabusQA authors ran (``code/retrievalauggen/get_retrieved_text.py``), so scores, the idf floor and
ties behave the same. ``bm25s`` is much faster on large corpora, but one syllabus has only a few hundred
chunks, so speed does not matter here and fidelity does. The authors tokenized with Pyserini's Lucene
analyzer with the Porter stemmer (Java); :func:`analyze` approximates it in Python: lower-case word
tokens, English possessives dropped, Lucene's 33 English stop words removed, Porter stems (NLTK's
original-algorithm mode, which matches Lucene's ``PorterStemFilter``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from nltk.stem.porter import PorterStemmer
from rank_bm25 import BM25Okapi

from evaluation.chunking import SEARCH_CHUNK_OVERLAP, SEARCH_CHUNK_SIZE, split_text

logger = logging.getLogger(__name__)

# org.apache.lucene.analysis.en.EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
LUCENE_ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)
_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_STEMMER = PorterStemmer(mode=PorterStemmer.ORIGINAL_ALGORITHM)


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    return _STEMMER.stem(token, to_lowercase=False)


def analyze(text: str) -> list[str]:
    """Turn text into BM25 terms the way Lucene's English analyzer with Porter stemming would.

    Args:
        text: any text (question or chunk).

    Returns:
        Stemmed, lower-cased terms without stop words, in order.
    """
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        token = re.sub(r"['’]s$", "", match.group(0))
        if token and token not in LUCENE_ENGLISH_STOP_WORDS:
            terms.append(_stem(token))
    return terms


@dataclass(frozen=True)
class RetrievedChunk:
    """One retrieved chunk with its rank (0 = best), position in the document and BM25 score."""

    text: str
    rank: int
    chunk_index: int
    score: float


class ChunkIndex:
    """A BM25 index over the chunks of one document (one syllabus).

    Build it once per document and query it for each question about that document.
    """

    def __init__(
        self,
        text: str,
        chunk_size: int = SEARCH_CHUNK_SIZE,
        chunk_overlap: int = SEARCH_CHUNK_OVERLAP,
    ) -> None:
        """Chunk ``text`` and index the chunks.

        Args:
            text: the whole document.
            chunk_size: chunk length in characters (200 for the search baseline).
            chunk_overlap: characters shared by adjacent chunks (50 for the search baseline).

        Raises:
            ValueError: when the document yields no chunk (empty text).
        """
        self.chunks: list[str] = split_text(text, chunk_size, chunk_overlap)
        if not self.chunks:
            raise ValueError("cannot index an empty document: it has no chunk")
        # rank-bm25 divides by the mean document length; a chunk with no term still counts as a document.
        self._bm25 = BM25Okapi([analyze(chunk) for chunk in self.chunks])

    def search(self, query: str, k: int = 1) -> list[RetrievedChunk]:
        """Return the ``k`` best chunks for ``query``, best first.

        Ties are broken as in the authors' code (``np.argsort(scores)[::-1]``), so with no matching term
        the last chunks of the document come first.

        Args:
            query: the question.
            k: how many chunks to return (fewer when the document has fewer chunks).

        Returns:
            The retrieved chunks, best first.
        """
        if k <= 0:
            raise ValueError(f"k={k} must be positive")
        scores = self._bm25.get_scores(analyze(query))
        order = np.argsort(scores)[::-1][:k]
        return [
            RetrievedChunk(text=self.chunks[i], rank=rank, chunk_index=int(i), score=float(scores[i]))
            for rank, i in enumerate(order)
        ]


def retrieve_top_k(
    document: str,
    queries: Sequence[str],
    k: int = 1,
    chunk_size: int = SEARCH_CHUNK_SIZE,
    chunk_overlap: int = SEARCH_CHUNK_OVERLAP,
) -> list[list[RetrievedChunk]]:
    """Chunk one document and retrieve the top-``k`` chunks for each query.

    Args:
        document: the syllabus text.
        queries: the questions about it.
        k: chunks per question (1 for the search baseline, 5 for RAG).
        chunk_size: chunk length in characters.
        chunk_overlap: overlap between adjacent chunks in characters.

    Returns:
        One list of chunks per query, in query order.
    """
    index = ChunkIndex(document, chunk_size, chunk_overlap)
    return [index.search(query, k) for query in queries]
