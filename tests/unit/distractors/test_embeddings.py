import numpy as np

from distractors.embeddings import NeighbourIndex, WordVectors
from distractors.text import tokenize


def test_nearest__tied_expressions_come_in_index_order(tiny_vectors):
    # 'heart', 'qwzx heart' (unknown word) and 'heart heart' have the same bag vector, so the same cosine.
    index = NeighbourIndex(["liver", "qwzx heart", "heart heart", "heart"], tiny_vectors)
    hits = index.nearest(tiny_vectors.bag(["heart"]), 2)
    assert [text for text, _ in hits] == ["qwzx heart", "heart heart"]
    assert hits[0][1] == hits[1][1]
    assert [text for text, _ in index.nearest(tiny_vectors.bag(["heart"]), 3)] == [
        "qwzx heart",
        "heart heart",
        "heart",
    ]


def test_train_word2vec__one_worker_same_seed_gives_identical_vectors():
    text = [
        "the heart pumps blood through the arteries and the liver filters blood",
        "nitrogen and oxygen and hydrogen are chemical elements found in the air",
        "electrons protons and neutrons are particles in an atom",
    ]
    sentences = [tokenize(s) for s in text] * 5
    first = WordVectors.train_word2vec(sentences, dim=8, epochs=2, min_count=1, seed=3, workers=1)
    second = WordVectors.train_word2vec(sentences, dim=8, epochs=2, min_count=1, seed=3, workers=1)
    other = WordVectors.train_word2vec(sentences, dim=8, epochs=2, min_count=1, seed=4, workers=1)
    assert np.array_equal(first.kv.vectors, second.kv.vectors)
    assert not np.array_equal(first.kv.vectors, other.kv.vectors)
