"""Distractor fixtures for every test package (a pytest plugin of tests/conftest.py, so session-scoped
fixtures are built once): WordNet, a tiny embedding model, and a small real ranker trained once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config.shared_data import dataset_dir, require_shared_data
from distractors.embeddings import WordVectors
from distractors.knowledge import WordNetKnowledge
from distractors.ranker import DistractorRanker, load_ranker
from distractors.shortlist import ShortlistConfig
from distractors.text import tokenize
from distractors.training import TrainConfig, train
from distractors.wordnet_loader import DEBIAN_WORDNET_DIR, load_wordnet

# Real sentences in the style of SciQ support passages, enough for Word2Vec to give every word a vector.
SENTENCES = [
    "the heart pumps blood through the arteries and the liver filters blood",
    "the liver and the kidney and the lung are organs of the body",
    "nitrogen and oxygen and hydrogen are chemical elements found in the air",
    "electrons protons and neutrons are particles in an atom",
    "predators such as hawks hunt prey animals like mice and frogs",
    "activation energy is the energy needed to start a chemical reaction",
    "regeneration and exhaustion and decomposition are processes",
    "a newspaper is printed on paper and sold in shops",
]


@pytest.fixture(scope="session")
def wordnet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Debian's WordNet 3.0 through NLTK (skips when wordnet-base is not installed; fails in CI)."""
    if not (DEBIAN_WORDNET_DIR / "data.noun").exists():
        message = "Debian's wordnet-base is not installed (/usr/share/wordnet); scripts/setup.sh installs it"
        if require_shared_data():
            pytest.fail(message)
        pytest.skip(message)
    return load_wordnet(Path(tmp_path_factory.mktemp("nltk_data")))


@pytest.fixture(scope="session")
def knowledge(wordnet: Any) -> WordNetKnowledge:
    """A WordNetKnowledge over the loaded WordNet."""
    return WordNetKnowledge(wordnet)


@pytest.fixture(scope="session")
def tiny_vectors() -> WordVectors:
    """Word2Vec trained on the eight sentences above (single thread, so it is deterministic)."""
    sentences = [tokenize(s) for s in SENTENCES] * 20
    return WordVectors.train_word2vec(sentences, dim=16, epochs=5, min_count=1, workers=1)


def _dataset(name: str) -> Path:
    """Session-scoped twin of the shared_data fixture (which is function-scoped): skip, or fail in CI."""
    path = dataset_dir(name)
    if path is None:
        message = f"dataset '{name}' not found (set CROWDQA_SHARED_DATA)"
        if require_shared_data():
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def trained(wordnet: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, list[str]]:
    """A small real ranker trained once per session on ARC + SciQ: (model dir, metrics, stages seen)."""
    out = tmp_path_factory.mktemp("ranker")
    config = TrainConfig(
        arc_dir=_dataset("arc"),
        sciq_dir=_dataset("sciq"),
        n_trees=40,
        max_questions=700,
        wordfreq_top_n=20_000,
        include_wordnet_glosses=False,
        tag_all_candidates=False,
        n_jobs=2,
        deterministic=True,  # one Word2Vec thread: the same vectors, so the same suggestions, every run
    )
    stages: list[str] = []
    metrics = train(config, out, lambda stage, fraction: stages.append(stage))
    return out, metrics, stages


# The small model (700 questions, 40 trees, no WordNet glosses) keeps the wider stage-1 shortlist the full
# model was first tuned with: with the full model's smaller default its Table 1 'electrons' list holds no
# particle (test_training).
SMALL_MODEL_SHORTLIST = ShortlistConfig(
    answer_neighbours=1500, context_neighbours=300, sibling_limit=400, swap_neighbours=60
)


@pytest.fixture(scope="session")
def ranker(trained: tuple[Path, dict, list[str]]) -> DistractorRanker:
    """The trained ranker, loaded once."""
    return load_ranker(trained[0], shortlist=SMALL_MODEL_SHORTLIST)
