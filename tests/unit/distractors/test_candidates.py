import pytest

from distractors.candidates import (
    CandidateSetError,
    build_candidate_set,
    load_candidate_set,
    save_candidate_set,
    unigram_swaps,
    wordnet_nouns,
)


def test_build_candidate_set__merges_normalises_and_counts_sources():
    c = build_candidate_set({"a": ["Oxygen", "oxygen ", "👶🏻"], "b": ["hydrogen", "oxygen"]})
    assert c.expressions == ("hydrogen", "oxygen")
    assert dict(c.sources) == {"a": 1, "b": 2}
    assert "oxygen" in c


def test_build_candidate_set__version_is_a_content_hash():
    one = build_candidate_set({"x": ["liver", "heart"]})
    same = build_candidate_set({"y": ["heart", "liver"]})
    other = build_candidate_set({"x": ["liver", "lung"]})
    assert one.version == same.version
    assert one.version != other.version


def test_load_candidate_set__roundtrip_and_tamper_detection(tmp_path):
    c = build_candidate_set({"x": ["liver", "heart", "activation energy"]})
    save_candidate_set(c, tmp_path)
    loaded = load_candidate_set(tmp_path)
    assert loaded.expressions == c.expressions and loaded.version == c.version
    (tmp_path / "candidates.txt").write_text("liver\nspleen\n", encoding="utf-8")
    with pytest.raises(CandidateSetError, match="does not match manifest"):
        load_candidate_set(tmp_path)


def test_unigram_swaps__exchanges_one_token_at_a_time():
    swaps = unigram_swaps("activation energy", {0: ["decomposition", "activation"], 1: ["heat"]})
    assert swaps == ["decomposition energy", "activation heat"]
    assert unigram_swaps("nitrogen", {0: ["oxygen"]}) == []


def test_wordnet_nouns__has_multiword_lemmas(wordnet):
    nouns = set(wordnet_nouns(wordnet))
    assert {"activation energy", "chemical element", "liver"} <= nouns
    assert len(nouns) > 100_000
