"""A small real ranker (conftest ``trained``: ARC + SciQ subset, few trees): training, loading, suggesting."""

import json

import numpy as np
import pytest

from distractors.ranker import RankerNotTrained, load_ranker, load_suggester, positive_proba


def test_train__metrics_and_artifacts(trained):
    out, metrics, stages = trained
    assert metrics["train_questions"] == 560 and metrics["validation_questions"] == 140
    assert metrics["validation_accuracy"] > 0.8  # random candidates are easy to tell from real distractors
    assert metrics["train_accuracy"] >= metrics["validation_accuracy"]
    sidecar = json.loads((out / "ranker.json").read_text())
    assert sidecar["candidate_set_version"] == metrics["candidate_set_version"]
    assert len(sidecar["feature_names"]) == metrics["n_features"]
    assert "chemical_element.n.01" in sidecar["concepts"]
    assert stages[0] == "questions" and stages[-1] == "done"


def test_load_ranker__suggest_returns_ranked_suggestions(ranker):
    suggestions = ranker.suggest("Which organ pumps blood through the body?", "heart", top=6)
    assert [s.rank for s in suggestions] == [1, 2, 3, 4, 5, 6]
    scores = [s.score for s in suggestions]
    assert scores == sorted(scores, reverse=True)
    assert "heart" not in [s.text for s in suggestions]


def test_load_ranker__missing_model_raises_and_suggester_falls_back(tmp_path):
    with pytest.raises(RankerNotTrained, match="train the ranker first"):
        load_ranker(tmp_path)
    assert load_suggester(tmp_path).name == "wordnet-sibling-fallback"


def _under(knowledge, text, synset_name):
    target = knowledge.wn.synset(synset_name)
    info = knowledge.info(text)
    return target in info.ancestors | info.senses


@pytest.mark.slow
def test_suggest__table1_questions_get_suggestions_of_the_right_kind(ranker, knowledge):
    nitrogen = ranker.suggest(
        "Compounds containing an atom of what element, bonded in a hydrocarbon framework, "
        "are classified as amines?",
        "nitrogen",
    )
    assert sum(_under(knowledge, s.text, "chemical_element.n.01") for s in nitrogen) >= 2, nitrogen
    electrons = ranker.suggest("Elements have orbitals that are filled with what?", "electrons")
    # Table 1 lists ions, atoms, protons, neutrons, photons: subatomic particles or atoms.
    assert (
        sum(
            _under(knowledge, s.text, "particle.n.02") or _under(knowledge, s.text, "atom.n.01")
            for s in electrons
        )
        >= 1
    ), electrons
    predators = ranker.suggest(
        "Many species use their body shape and coloration to avoid being detected by what?", "predators"
    )
    assert sum(_under(knowledge, s.text, "organism.n.01") for s in predators) >= 1
    energy = ranker.suggest(
        "The small amount of energy input necessary for all chemical reactions to occur is called what?",
        "activation energy",
    )
    assert sum("energy" in s.text for s in energy) >= 3


def test_positive_proba__equals_the_forests_predict_proba_exactly(ranker):
    """The per-tree sum the ranker scores with gives sklearn's probabilities bit for bit (same tree order)."""
    question, answer = "Which organ pumps blood through the body?", "heart"
    candidates = ranker.shortlist(question, answer)
    matrix = ranker.parts.extractor.matrix(question, answer, candidates)
    positive = list(ranker.forest.classes_).index(1)
    expected = ranker.forest.predict_proba(matrix)[:, positive]
    assert np.array_equal(positive_proba(ranker.forest, matrix, positive), expected)
    assert np.array_equal(ranker.score(question, answer, candidates), expected)
