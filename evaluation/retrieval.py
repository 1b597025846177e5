"""BM25 retrieval of syllabus chunks: the search baseline's answers and the RAG baselines' snippets.

Library choice: ``rank-bm25`` (``BM25Okapi``, k1=1.5, b=0.75, epsilon=0.25), because it is exactly what
the SyllabusQA authors ran (``code/retrievalauggen/get_retrieved_text.py``), so scores, the idf floor and
ties behave the same. ``bm25s`` is much faster on large corpora, but one syllabus has only a few hundred
chunks, so speed does not matter here and fidelity does.

The authors tokenized with Pyserini's ``Analyzer(get_lucene_analyzer(stemmer="porter"))`` (Java Lucene:
``StandardTokenizer``, ``EnglishPossessiveFilter``, ``LowerCaseFilter``, ``StopFilter`` with Lucene's 33
English stop words, ``PorterStemFilter``). :func:`analyze` runs the same chain in Python:

- words are Unicode UAX#29 word boundaries from ICU's word ``BreakIterator`` (PyICU), which is what
  Lucene's ``StandardTokenizer`` implements: ``www.umass.edu``, ``3.5``, ``e.g`` and ``don't`` stay whole;
  on top of that, Lucene's rules: only segments with a letter or digit (ICU's word rule status), and
  emoji, are tokens, and ``@`` separates words as in UAX#29 (ICU's root rules join it); each Han
  ideograph and Hiragana character is its own token (ICU's dictionary would group them into words), and
  tokens longer than 255 characters are cut into 255-character pieces;
- emoji are tokens as in Lucene's ``<EMOJI>`` rule (TR#51 emoji sequences): a segment that starts with an
  Extended_Pictographic character (which includes ``©``, ``®``, ``™``, ``▪``, ``☐``) or an emoji
  modifier, or is a pair of regional indicators (a flag). ICU's segments already hold the whole sequence
  (presentation selector, skin-tone modifier, ZWJ sequence, tag sequence, keycap); the character
  properties are ICU's (Unicode 15; Lucene 9 generated its tables from Unicode 14);
- a trailing ``'s`` is dropped, tokens are lower-cased, stop words removed;
- Porter stems from NLTK's ``MARTIN_EXTENSIONS`` mode, Martin Porter's own implementation, which is what
  Lucene's ``PorterStemmer`` is (``possibly`` -> ``possibl``, ``psychology`` -> ``psycholog``; the original
  1980 algorithm gives ``possibli``, ``psychologi``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import icu
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
# StandardTokenizer.DEFAULT_MAX_TOKEN_LENGTH: longer tokens are cut into pieces of this length.
MAX_TOKEN_LENGTH = 255
_POSSESSIVE_RE = re.compile(r"['’\uff07][sS]$")
# Lucene emits each ideograph and each Hiragana character as its own token.
_SINGLE_CHAR_RE = re.compile(r"([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])")
_ZWJ = "\u200d"
_WORD_NUMBER = (
    100  # ICU's UBRK_WORD_NUMBER: rule statuses from here up are numbers, letters, kana, ideographs
)
_KEYCAP, _KEYCAP_BASES = "\u20e3", frozenset("0123456789#*")
# Lucene keeps a run of Line_Break=Complex_Context characters (South-East Asian scripts) as one token.
_COMPLEX_CONTEXT_RUN = re.compile(
    "[" + "".join(re.escape(c) for c in icu.UnicodeSet("[:Line_Break=Complex_Context:]")) + "]+"
)
_STEMMER = PorterStemmer(mode=PorterStemmer.MARTIN_EXTENSIONS)
_LOCAL = threading.local()  # an ICU BreakIterator holds its text: one per thread


def _word_breaks() -> icu.BreakIterator:
    breaks = getattr(_LOCAL, "breaks", None)
    if breaks is None:
        breaks = _LOCAL.breaks = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    return breaks


@lru_cache(maxsize=65536)
def _stem(token: str) -> str:
    return _STEMMER.stem(token, to_lowercase=False)


def _has(char: str, prop: int) -> bool:
    return bool(icu.Char.hasBinaryProperty(char, prop))


def _starts_emoji(text: str, i: int) -> bool:
    char = text[i]
    if _has(char, icu.UProperty.EXTENDED_PICTOGRAPHIC) or _has(char, icu.UProperty.EMOJI_MODIFIER):
        return True
    if char in _KEYCAP_BASES:
        return text[i + 1 : i + 2] == _KEYCAP or text[i + 1 : i + 3] == "\ufe0f" + _KEYCAP
    pair = text[i : i + 2]
    return len(pair) == 2 and all(_has(c, icu.UProperty.REGIONAL_INDICATOR) for c in pair)


def emoji_token(segment: str) -> str:
    """The ``<EMOJI>`` token Lucene's ``StandardTokenizer`` finds in a word-break segment without letters
    or digits, or '' when it has none.

    Lucene's emoji rule starts a token at an Extended_Pictographic character (``©``, ``™`` and ``▪`` are
    ones), an emoji modifier, a keycap (``#️⃣``; a digit keycap holds a digit and is a word token already)
    or a pair of regional indicators (a flag), with any ZWJ just before it; what precedes is skipped (a
    skin-tone modifier is a UAX#29 Extend character, so ICU puts a lone one after a space into the
    space's segment). Bare ``#`` and ``*`` are no tokens.
    """
    for i in range(len(segment)):
        if _starts_emoji(segment, i):
            while i > 0 and segment[i - 1] == _ZWJ:
                i -= 1
            return segment[i:]
    return ""


def _pieces(token: str) -> list[str]:
    return [token[i : i + MAX_TOKEN_LENGTH] for i in range(0, len(token), MAX_TOKEN_LENGTH)]


def words(text: str) -> list[str]:
    """Split text into the tokens of Lucene's ``StandardTokenizer`` (UAX#29 words), case kept.

    A run of South-East Asian script (Line_Break=Complex_Context: Thai, Lao, Myanmar, Khmer...) is one
    token, as in Lucene; ICU would split it into dictionary words and join it to adjacent Latin letters.

    Args:
        text: any text.

    Returns:
        The word tokens in order.
    """
    if not _COMPLEX_CONTEXT_RUN.search(text):
        return _uax29_words(text)
    tokens: list[str] = []
    start = 0
    for run in _COMPLEX_CONTEXT_RUN.finditer(text):
        tokens += _uax29_words(text[start : run.start()]) + _pieces(run.group())
        start = run.end()
    return tokens + _uax29_words(text[start:])


def _uax29_words(text: str) -> list[str]:
    tokens: list[str] = []
    breaks = _word_breaks()
    # ICU's root rules count '@' as a letter (so e-mail addresses stay whole); UAX#29 and Lucene do not.
    breaks.setText(text.replace("@", " ") if "@" in text else text)
    start = breaks.first()
    # ICU works in UTF-16 offsets; slice the UTF-16 form so characters outside the BMP stay aligned.
    utf16 = text.encode("utf-16-le") if any(ord(c) > 0xFFFF for c in text) else None
    for end in breaks:
        segment = text[start:end] if utf16 is None else utf16[2 * start : 2 * end].decode("utf-16-le")
        start = end
        # A status below UBRK_WORD_NUMBER: no letter, digit, kana or ideograph (spaces, punctuation, and
        # symbols such as superscript digits, which are not UAX#29 Numeric); only emoji are tokens there.
        if breaks.getRuleStatus() < _WORD_NUMBER:
            emoji = emoji_token(segment)
            if emoji:
                tokens.extend(_pieces(emoji))
            continue
        for piece in _SINGLE_CHAR_RE.split(segment):
            if piece and any(c.isalnum() for c in piece):
                tokens.extend(_pieces(piece))
    return tokens


def analyze(text: str) -> list[str]:
    """Turn text into BM25 terms the way Pyserini's Lucene analyzer with Porter stemming does.

    Args:
        text: any text (question or chunk).

    Returns:
        Stemmed, lower-cased terms without stop words, in order.
    """
    terms: list[str] = []
    for word in words(text):
        token = _POSSESSIVE_RE.sub("", word).lower()
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
