import numpy as np
import pytest

from distractors.analysis import ExpressionAnalyzer, PosTagger
from distractors.features import FEATURE_GROUPS, HAND_FEATURES, FeatureExtractor


@pytest.fixture(scope="module")
def extractor(knowledge, tiny_vectors):
    concepts = ["chemical_element.n.01", "organ.n.01"]
    return FeatureExtractor(tiny_vectors, ExpressionAnalyzer(PosTagger(), knowledge), concepts)


def _features(extractor, question, answer, candidates):
    matrix = extractor.matrix(question, answer, candidates)
    names = extractor.feature_names
    assert matrix.shape == (len(candidates), len(names))
    return [dict(zip(names, row.tolist(), strict=True)) for row in matrix]


def test_feature_groups__every_group_documented():
    assert set(HAND_FEATURES) <= set(FEATURE_GROUPS)
    assert "concepts" in FEATURE_GROUPS


def test_matrix__heart_liver_share_organ_newspaper_does_not(extractor, tiny_vectors):
    liver, newspaper = _features(extractor, "Which organ pumps blood?", "heart", ["liver", "newspaper"])
    assert liver["share_hypernym_1"] == 1 and newspaper["share_hypernym_1"] == 0
    assert liver["concept_organ.n.01"] == 1 and newspaper["concept_organ.n.01"] == 0
    assert liver["q_ancestor_of_d"] == 1  # "organ" in the question generalises liver
    heart_v, liver_v = tiny_vectors.bag(["heart"]), tiny_vectors.bag(["liver"])
    expected = heart_v @ liver_v / (np.linalg.norm(heart_v) * np.linalg.norm(liver_v))
    assert liver["cos_a_d"] == pytest.approx(float(expected), abs=1e-5)
    assert liver["d_emb_0"] == pytest.approx(float(liver_v[0]))


def test_matrix__nitrogen_oxygen_share_chemical_element(extractor):
    oxygen, soil = _features(
        extractor, "Amines contain an atom of what element?", "nitrogen", ["oxygen", "soil"]
    )
    assert oxygen["concept_chemical_element.n.01"] == 1 and soil["concept_chemical_element.n.01"] == 0
    assert oxygen["concept_any"] == 1
    assert oxygen["q_hypernym_of_d_1"] == 1  # the question's "element" is oxygen's hypernym


def test_matrix__grammatical_and_string_features(extractor):
    protons, proton, exhaustion = _features(
        extractor, "Atoms contain what?", "electrons", ["protons", "proton", "exhaustion"]
    )
    assert protons["plural_same"] == 1 and proton["plural_same"] == 0
    assert protons["pos_head_same"] == 1
    assert protons["suffix3_same"] == 1
    assert protons["levenshtein"] == 5  # electrons -> protons
    (regen,) = _features(extractor, "What happens?", "regeneration", ["exhaustion"])
    assert regen["suffix4_same"] == 1


def test_matrix__numbers_units_overlap_and_lengths(extractor):
    seven, word, energy = _features(
        extractor,
        "A 5 kg rock falls for how many seconds?",
        "3 seconds",
        ["7 seconds", "oxygen", "activation energy"],
    )
    assert seven["numeric_same"] == 1 and word["numeric_same"] == 0
    assert seven["unit_shared_a_d"] == 1 and seven["unit_q"] == 1
    assert seven["overlap_a_d"] == pytest.approx(1 / 3)
    assert energy["ntok_d"] == 2 and energy["nchar_d"] == len("activation energy")


def test_matrix__empty_candidates(extractor):
    assert extractor.matrix("q?", "heart", []).shape == (0, len(extractor.feature_names))
    assert np.all(np.isfinite(extractor.matrix("q?", "qwzx", ["liver"])))
