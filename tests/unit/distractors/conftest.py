"""Fixtures for the distractor tests: WordNet (loaded once) and a tiny embedding model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config.shared_data import require_shared_data
from distractors.embeddings import WordVectors
from distractors.knowledge import WordNetKnowledge
from distractors.text import tokenize
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
