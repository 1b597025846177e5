"""The candidate set C from which distractors are ranked (paper §3.2, 'Model Training').

The paper's C had 488,819 expressions: the GloVe vocabulary, distractors seen in training questions,
body-part noun phrases and a school-science noun vocabulary, plus, for a multi-word answer, every
expression obtained by exchanging one of its unigrams. Ours is built from sources available offline:
wordfreq's English vocabulary (a web-scale word list like GloVe's), the embedding model's vocabulary,
the vocabulary of the platform's corpora, WordNet nouns (multi-word lemmas included) and training
distractors. The unigram swaps depend on the answer, so they are generated at query time
(``unigram_swaps``) rather than stored. C is persisted as a sorted text file plus a JSON manifest whose
``version`` is a content hash, so a trained model can name the exact C it was trained against.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from distractors.text import is_expression, normalize

logger = logging.getLogger(__name__)

CANDIDATES_FILE = "candidates.txt"
MANIFEST_FILE = "candidates.json"


class CandidateSetError(ValueError):
    """Raised when a persisted candidate set is missing or does not match its manifest."""


@dataclass(frozen=True)
class CandidateSet:
    """A versioned, sorted set of candidate distractor expressions."""

    expressions: tuple[str, ...]
    version: str
    sources: Mapping[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.expressions)

    def __contains__(self, expression: str) -> bool:
        return expression in self.lookup

    @property
    def lookup(self) -> frozenset[str]:
        """Return the expressions as a frozenset (built once)."""
        cached = self.__dict__.get("_lookup")
        if cached is None:
            cached = frozenset(self.expressions)
            object.__setattr__(self, "_lookup", cached)
        return cached

    def unigrams(self) -> list[str]:
        """Return the one-token expressions (the material for unigram swaps)."""
        return [e for e in self.expressions if " " not in e]


def content_version(expressions: Sequence[str]) -> str:
    """Return a short sha256 of the sorted expressions: equal sets always get equal versions."""
    digest = hashlib.sha256("\n".join(expressions).encode("utf-8")).hexdigest()
    return digest[:16]


def build_candidate_set(sources: Mapping[str, Iterable[str]]) -> CandidateSet:
    """Merge named sources of expressions into one candidate set.

    Args:
        sources: source name -> expressions (raw text; normalised and filtered here).

    Returns:
        The CandidateSet, with the number of distinct expressions each source contributed.
    """
    merged: set[str] = set()
    counts: dict[str, int] = {}
    for name, items in sources.items():
        kept = {n for n in (normalize(x) for x in items) if n and is_expression(n)}
        counts[name] = len(kept)
        merged |= kept
    expressions = tuple(sorted(merged))
    logger.info("candidate set: %d expressions from %s", len(expressions), counts)
    return CandidateSet(expressions, content_version(expressions), counts)


def save_candidate_set(candidates: CandidateSet, directory: Path) -> Path:
    """Write ``candidates.txt`` and ``candidates.json`` into a directory and return the manifest path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CANDIDATES_FILE).write_text("\n".join(candidates.expressions) + "\n", encoding="utf-8")
    manifest = {
        "version": candidates.version,
        "size": len(candidates),
        "sources": dict(candidates.sources),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "file": CANDIDATES_FILE,
    }
    path = directory / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return path


def load_candidate_set(directory: Path) -> CandidateSet:
    """Read a candidate set written by ``save_candidate_set`` and check its content hash.

    Raises:
        CandidateSetError: when a file is missing or the content does not match the manifest version.
    """
    manifest_path = directory / MANIFEST_FILE
    data_path = directory / CANDIDATES_FILE
    if not manifest_path.exists() or not data_path.exists():
        raise CandidateSetError(f"{directory}: {MANIFEST_FILE} or {CANDIDATES_FILE} missing")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    expressions = tuple(line for line in data_path.read_text(encoding="utf-8").split("\n") if line)
    version = content_version(expressions)
    if version != manifest.get("version"):
        raise CandidateSetError(
            f"{data_path}: content hash {version} does not match manifest version {manifest.get('version')!r}"
        )
    return CandidateSet(expressions, version, manifest.get("sources", {}))


def wordfreq_vocabulary(top_n: int) -> list[str]:
    """Return the ``top_n`` most frequent English words of wordfreq's 'large' list (GloVe-like vocabulary)."""
    import wordfreq

    return wordfreq.top_n_list("en", top_n, wordlist="large")


def wordnet_nouns(wordnet) -> list[str]:
    """Return every WordNet noun lemma, underscores turned into spaces ('activation energy')."""
    return [name.replace("_", " ") for name in wordnet.all_lemma_names("n")]


def corpus_vocabulary(token_lists: Iterable[list[str]], min_count: int = 2) -> list[str]:
    """Return the tokens seen at least ``min_count`` times in tokenised corpora."""
    counts: Counter[str] = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    return [token for token, count in counts.items() if count >= min_count]


def unigram_swaps(answer: str, replacements: Mapping[int, Iterable[str]]) -> list[str]:
    """Return the expressions obtained by exchanging one unigram of a multi-word answer.

    Args:
        answer: the normalised correct answer ('activation energy').
        replacements: token position -> unigrams to put there.

    Returns:
        Distinct new expressions ('decomposition energy', 'activation heat' ...); empty for one-word answers.
    """
    tokens = answer.split(" ")
    if len(tokens) < 2:
        return []
    out: dict[str, None] = {}
    for position, words in replacements.items():
        if not 0 <= position < len(tokens):
            continue
        for word in words:
            if word == tokens[position] or " " in word:
                continue
            swapped = tokens[:position] + [word] + tokens[position + 1 :]
            out[" ".join(swapped)] = None
    return list(out)
