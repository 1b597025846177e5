"""The trained distractor ranker: loads the artifacts of ``training.train`` and suggests distractors.

Suggesting runs in two stages (see ``shortlist``): a few hundred candidates are collected cheaply from
the whole candidate set C, then the random forest scores them with the full features phi(q, a*, a').
``rank_full`` scores all of C instead (slow; used to measure what the shortlist loses).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from distractors.analysis import ExpressionAnalyzer, PosTagger
from distractors.candidates import CandidateSet, load_candidate_set, unigram_swaps
from distractors.embeddings import NeighbourIndex, WordVectors
from distractors.features import FeatureExtractor
from distractors.knowledge import WordNetKnowledge
from distractors.shortlist import DEFAULT_SHORTLIST, CandidateGenerator, ShortlistConfig
from distractors.suggestion import Suggestion, ranked_suggestions
from distractors.text import is_answer_variant, normalize

logger = logging.getLogger(__name__)

MODEL_FILE = "ranker.joblib"
SIDECAR_FILE = "ranker.json"
VECTORS_FILE = "vectors.kv"
POS_CACHE_FILE = "pos_cache.tsv"
SEEN_FILE = "seen_distractors.json"
FORMAT_VERSION = 1


class RankerNotTrained(FileNotFoundError):
    """Raised when a model directory holds no trained ranker (use a fallback suggester instead)."""


@dataclass
class RankerParts:
    """Everything a ranker needs at suggestion time, shared by training and loading."""

    candidates: CandidateSet
    vectors: WordVectors
    knowledge: WordNetKnowledge
    analyzer: ExpressionAnalyzer
    extractor: FeatureExtractor
    seen: dict[str, list[str]]


def assemble_parts(
    candidates: CandidateSet,
    vectors: WordVectors,
    knowledge: WordNetKnowledge,
    tagger: PosTagger,
    concepts: Sequence[str],
    seen: dict[str, list[str]],
) -> RankerParts:
    """Wire the analyzer and feature extractor from their ingredients."""
    analyzer = ExpressionAnalyzer(tagger, knowledge)
    extractor = FeatureExtractor(vectors, analyzer, concepts)
    return RankerParts(candidates, vectors, knowledge, analyzer, extractor, seen)


def positive_proba(forest: Any, matrix: np.ndarray, positive: int) -> np.ndarray:
    """Return ``forest.predict_proba(matrix)[:, positive]``, the same floats, without per-tree overhead.

    scikit-learn's forest ``predict_proba`` runs each tree through joblib with a wrapper that sets up
    warning filters and configuration per call: about 0.5 ms a tree, so 0.25 s of every suggestion for a
    500-tree forest, more than the trees' own work on a shortlist. This sums each tree's stored leaf
    class fractions (``tree_.predict``, which the tree's own ``predict_proba`` returns) in estimator order
    and divides by the number of trees, as the forest does with one job.
    """
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    total = np.zeros(len(rows), dtype=np.float64)
    for tree in forest.estimators_:
        total += tree.tree_.predict(rows)[:, positive]
    return total / len(forest.estimators_)


class DistractorRanker:
    """Random-forest distractor ranker with a two-stage ``suggest``."""

    name = "random-forest-ranker"

    def __init__(
        self,
        forest: Any,
        parts: RankerParts,
        metadata: dict[str, Any],
        shortlist: ShortlistConfig = DEFAULT_SHORTLIST,
    ) -> None:
        """Bind a fitted forest to its feature pipeline and build the stage-1 indexes over C."""
        self.forest = forest
        self.parts = parts
        self.metadata = metadata
        self.index = NeighbourIndex(list(parts.candidates.expressions), parts.vectors)
        self.unigram_index = NeighbourIndex(parts.candidates.unigrams(), parts.vectors)
        self.generator = CandidateGenerator(
            self.index, self.unigram_index, parts.knowledge, parts.seen, shortlist
        )

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.parts.extractor.feature_names

    @property
    def model_version(self) -> str:
        """Name and trained version (candidate set, seed, trees), stored with every suggestion it makes."""
        version = self.metadata.get("model_version")
        return f"{self.name}:{version}" if version else self.name

    def score(self, question: str, answer: str, candidates: Sequence[str], batch: int = 20000) -> np.ndarray:
        """Return P(a' is a good distractor | q, a*) for each candidate (paper eq. 1)."""
        extractor = self.parts.extractor
        ctx = extractor.context(question, answer)
        scores = np.zeros(len(candidates), dtype=np.float64)
        positive = list(self.forest.classes_).index(1)
        for start in range(0, len(candidates), batch):
            chunk = candidates[start : start + batch]
            scores[start : start + len(chunk)] = positive_proba(
                self.forest, extractor.matrix_for(ctx, chunk), positive
            )
        return scores

    def _top(self, candidates: Sequence[str], scores: np.ndarray, top: int) -> list[Suggestion]:
        """Return the ``top`` best candidates: score descending, ties by text (see ``ranked_suggestions``)."""
        return ranked_suggestions(
            zip(candidates, scores.tolist(), strict=True), top, source=self.model_version
        )

    def rank(self, question: str, answer: str, candidates: Sequence[str]) -> list[Suggestion]:
        """Score and sort arbitrary candidates (answer variants removed)."""
        a = normalize(answer)
        kept = [
            c for c in dict.fromkeys(normalize(c) for c in candidates) if c and not is_answer_variant(a, c)
        ]
        return self._top(kept, self.score(question, a, kept), len(kept))

    def shortlist(self, question: str, answer: str) -> list[str]:
        """Return the stage-1 candidates for (q, a*)."""
        return self.generator.generate(question, answer)

    def suggest(self, question: str, answer: str, top: int = 6) -> list[Suggestion]:
        """Return the ``top`` best distractors: stage-1 shortlist, then the forest."""
        candidates = self.shortlist(question, answer)
        ranked = self._top(candidates, self.score(question, answer, candidates), top) if candidates else []
        if len(ranked) >= top:
            return ranked
        # An answer outside the candidate set's vocabulary gets a short or empty shortlist: the WordNet
        # fallbacks (sub-word and question context included) fill the list, each suggestion labelled.
        from distractors.fallback import WordNetSiblingFallback

        taken = {s.text for s in ranked}
        extra = [
            s
            for s in WordNetSiblingFallback(self.parts.knowledge).suggest(question, answer, top + len(taken))
            if s.text not in taken
        ]
        return ranked + [
            Suggestion(s.text, s.score, len(ranked) + i, s.source)
            for i, s in enumerate(extra[: top - len(ranked)], start=1)
        ]

    def full_candidates(self, answer: str) -> list[str]:
        """Return all of C for this answer: the stored set plus every unigram swap of a multi-word answer."""
        a = normalize(answer)
        base = [c for c in self.parts.candidates.expressions if not is_answer_variant(a, c)]
        tokens = a.split(" ")
        if len(tokens) < 2:
            return base
        vocab = self.unigram_index.expressions
        swaps = unigram_swaps(a, {i: vocab for i in range(len(tokens))})
        lookup = self.parts.candidates.lookup
        return base + [s for s in swaps if s not in lookup]

    def rank_full(
        self,
        question: str,
        answer: str,
        top: Optional[int] = None,
        progress: Optional[Callable[[int, int], None]] = None,
        batch: int = 20000,
    ) -> list[Suggestion]:
        """Score every candidate of C (slow: about a minute per question) and return the best first."""
        candidates = self.full_candidates(answer)
        extractor = self.parts.extractor
        ctx = extractor.context(question, answer)
        positive = list(self.forest.classes_).index(1)
        scores = np.zeros(len(candidates))
        for start in range(0, len(candidates), batch):
            chunk = candidates[start : start + batch]
            scores[start : start + len(chunk)] = self.forest.predict_proba(extractor.matrix_for(ctx, chunk))[
                :, positive
            ]
            if progress:
                progress(start + len(chunk), len(candidates))
        return self._top(candidates, scores, top or len(candidates))


def load_ranker(
    model_dir: Path,
    n_jobs: int = 1,
    shortlist: ShortlistConfig = DEFAULT_SHORTLIST,
    warm: bool = False,
) -> DistractorRanker:
    """Load a ranker trained by ``distractors.training.train`` from its directory.

    Args:
        model_dir: the directory given to ``train`` (e.g. $CROWDQA_MODEL_DIR/distractors).
        n_jobs: threads the forest uses when scoring.
        shortlist: stage-1 sizes.
        warm: read all of WordNet's noun synsets now (about 10 s), so that suggesting never parses one;
            what a process serving suggestions wants, not a test or a one-off command.

    Returns:
        A DistractorRanker.

    Raises:
        RankerNotTrained: when the model or its sidecar is missing.
        distractors.candidates.CandidateSetError: when the candidate file does not match its hash.
    """
    import joblib

    from distractors.wordnet_loader import load_wordnet

    model_dir = Path(model_dir)
    sidecar_path = model_dir / SIDECAR_FILE
    if not (model_dir / MODEL_FILE).exists() or not sidecar_path.exists():
        raise RankerNotTrained(f"{model_dir}: no {MODEL_FILE} / {SIDECAR_FILE}; train the ranker first")
    metadata = json.loads(sidecar_path.read_text(encoding="utf-8"))
    candidates = load_candidate_set(model_dir)
    if candidates.version != metadata.get("candidate_set_version"):
        raise RankerNotTrained(
            f"{sidecar_path}: trained on candidate set {metadata.get('candidate_set_version')!r}, "
            f"but {model_dir} holds {candidates.version!r}"
        )
    forest = joblib.load(model_dir / MODEL_FILE)
    forest.n_jobs = n_jobs
    parts = assemble_parts(
        candidates,
        WordVectors.load(model_dir / VECTORS_FILE),
        WordNetKnowledge(load_wordnet()),
        PosTagger.load(model_dir / POS_CACHE_FILE),
        metadata["concepts"],
        json.loads((model_dir / SEEN_FILE).read_text(encoding="utf-8")),
    )
    if tuple(metadata["feature_names"]) != parts.extractor.feature_names:
        raise RankerNotTrained(f"{sidecar_path}: feature names differ from this code's; retrain the ranker")
    if warm:
        parts.knowledge.preload()
    return DistractorRanker(forest, parts, metadata, shortlist)


def load_suggester(model_dir: Optional[Path]) -> Any:
    """Return the trained ranker in ``model_dir``, or the WordNet-sibling fallback when there is none.

    The stage-2 HIT calls this (once per process): before any ranker is trained, workers still get
    suggestions; a trained ranker is loaded warm (see ``load_ranker``).
    """
    from distractors.fallback import WordNetSiblingFallback

    if model_dir is not None:
        try:
            return load_ranker(Path(model_dir), warm=True)
        except RankerNotTrained as exc:
            logger.warning("using %s: %s", WordNetSiblingFallback.name, exc)
    return WordNetSiblingFallback()
