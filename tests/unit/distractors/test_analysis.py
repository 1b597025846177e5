from distractors.analysis import ExpressionAnalyzer, PosTagger, log_average_frequency


def test_pos_tagger__plural_noun_and_cache_roundtrip(tmp_path):
    tagger = PosTagger()
    tagger.tag_many(["electrons", "activation energy"])
    assert tagger.tags("electrons") == ("NNS",)
    assert tagger.tags("activation energy")[-1] == "NN"
    tagger.save(tmp_path / "pos.tsv")
    assert PosTagger.load(tmp_path / "pos.tsv").cache == tagger.cache


def test_log_average_frequency__common_words_score_higher():
    assert log_average_frequency(["water"]) > log_average_frequency(["ferredoxin"])


def test_expression_analyzer__attributes(knowledge):
    analyzer = ExpressionAnalyzer(PosTagger(), knowledge)
    info = analyzer.info("5 kg")
    assert info.numeric and info.units == {"kg"}
    electrons = analyzer.info("electrons")
    assert electrons.plural and not analyzer.info("oxygen").plural
    assert electrons.n_tokens == 1 and electrons.n_chars == 9
    assert analyzer.info("electrons") is electrons
