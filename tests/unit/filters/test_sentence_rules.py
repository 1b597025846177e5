"""Per-rule behaviour of filters/sentence_rules.py: each rule fires on its example and not on a clean one."""

from __future__ import annotations

import pytest

from filters.sentence_filter import filter_sentences, load_pipeline
from filters.sentence_rules import RULE_CODES, FilterOptions, SentenceView, fired_rules

CLEAN = "Ocean currents transfer heat from the Equator toward the poles."

# (code, sentence on which the rule must fire); all real SciQ support sentences or close to them.
FIRING = [
    ("question_or_exclamation", "How does the organism interact with other organisms?"),
    ("question_or_exclamation", "Discussion Quite a trip for the small probe (if it survives)!"),
    ("no_verb_phrase", "(credit: modification of work by a lab photographer)."),
    ("modal_verb", "Pneumonia may be caused by an infection or an injury to the lungs."),
    ("imperative", "Look at the hummingbird and jellyfish in the picture."),
    ("imperative", "Coulomb repulsion is reduced by more neutrons (see the next example)."),
    ("imperative", "Let us use an acetate buffer to demonstrate how buffers work."),
    ("demonstrative_pronoun", "Vascular tissue allowed these plants to grow taller."),
    (
        "non_third_person_pronoun",
        "When the immune system is working properly, it keeps you from getting sick.",
    ),
    ("starts_with_pronoun", "They need a moist environment to survive in the forest."),
    ("starts_with_pronoun", "This greatly increases the chance that fertilization occurs."),
    ("first_name", "Charles Darwin proposed the theory of evolution by natural selection."),
    ("length", "Charged atoms are called ions."),
    (
        "length",
        "Fungi produce spores that disperse from the parent organism by either floating on the wind "
        "or hitching a ride.",
    ),
    ("too_many_commas", "Agents of erosion include flowing water, waves, wind, ice, or gravity."),
    ("special_characters", "Mesophiles grow best between 25°C and 40°C in most soils."),
    ("too_many_capitalized", "The Centers for Disease Control and Prevention tracks tobacco use."),
    ("mentions_figure_table_link", "The circle graph in the Figure below shows the composition of air."),
    ("mentions_figure_table_link", "More examples of inclined planes are listed at www.example.org today."),
    ("discourse_marker_start", "However, water-soluble materials need assistance to cross the membrane."),
    ("discourse_marker_start", "For example, a giraffe’s neck allows the giraffe to reach high leaves."),
    ("absolute_wording", "Peat, found in a bog or swamp, is totally organic soil."),
    ("instructional_vocabulary", "The teacher hands out a worksheet about the water cycle."),
]


@pytest.mark.parametrize(("code", "sentence"), FIRING)
def test_filter_sentences__rule_fires_on_example(code: str, sentence: str) -> None:
    (verdict,) = filter_sentences([sentence])
    assert code in verdict.rules
    assert not verdict.accepted


def test_filter_sentences__clean_sentence_accepted() -> None:
    (verdict,) = filter_sentences([CLEAN])
    assert verdict.accepted
    assert verdict.rules == ()


@pytest.mark.parametrize(
    ("code", "sentence"),
    [
        ("demonstrative_pronoun", "Light is a form of energy that travels in waves."),
        ("non_third_person_pronoun", "The I band contains only thin filaments and also shortens."),
        (
            "mentions_figure_table_link",
            "All naturally occurring sodium exists as sodium chloride or table salt.",
        ),
        ("mentions_figure_table_link", "Scientists can figure out the environment of deposition of a rock."),
        (
            "discourse_marker_start",
            "In addition to holding cells together, tight junctions transport materials.",
        ),
        ("first_name", "When Mendel crossed heterozygous plants, he found a consistent ratio."),
        ("starts_with_pronoun", "There are a great many compounds with equal formulas."),
        ("too_many_commas", "The Earth is about 4,600,000,000 years old by most estimates."),
        ("imperative", "Figure 14.11 Vinegar is a solution of acetic acid in water."),
    ],
)
def test_filter_sentences__rule_does_not_fire_on_look_alike(code: str, sentence: str) -> None:
    (verdict,) = filter_sentences([sentence])
    assert code not in verdict.rules


def test_filter_sentences__reports_every_rule_that_fires() -> None:
    (verdict,) = filter_sentences(["However, you might see this in Figure 2!"])
    assert {
        "question_or_exclamation",
        "modal_verb",
        "demonstrative_pronoun",
        "non_third_person_pronoun",
        "mentions_figure_table_link",
        "discourse_marker_start",
    } <= set(verdict.rules)


def test_filter_sentences__thresholds_configurable() -> None:
    sentence = "Charged atoms are called ions."
    (default,) = filter_sentences([sentence])
    (loose,) = filter_sentences([sentence], FilterOptions(min_tokens=3))
    assert "length" in default.rules
    assert "length" not in loose.rules


def test_filter_sentences__disabled_rule_skipped() -> None:
    sentence = "Pneumonia may be caused by an infection or an injury to the lungs."
    (verdict,) = filter_sentences([sentence], FilterOptions(disabled_rules=frozenset({"modal_verb"})))
    assert verdict.accepted


def test_filter_options__unknown_rule_rejected() -> None:
    with pytest.raises(ValueError, match="unknown rule codes"):
        FilterOptions(disabled_rules=frozenset({"no_such_rule"}))


def test_filter_sentences__keeps_order_and_json_shape() -> None:
    texts = [CLEAN, "They need water.", CLEAN]
    verdicts = list(filter_sentences(texts))
    assert [v.text for v in verdicts] == texts
    assert verdicts[1].to_dict() == {
        "text": "They need water.",
        "accepted": False,
        "rules": list(verdicts[1].rules),
    }


def test_rule_codes__match_design_vocabulary() -> None:
    assert len(RULE_CODES) == 16
    assert {code for code, _ in FIRING} == set(RULE_CODES)


@pytest.mark.parametrize(
    "sentence",
    [
        # Labelled set ids 52, 56 and 316: the only verb is a form of be/have (AUX), read from the Penn
        # tag now that the attribute_ruler (which maps tags to VERB/AUX) is not run.
        "An emulsion is a colloidal dispersion of a liquid in either a liquid or a solid.",
        "Some plants also have a secondary cell wall.",
        "The cholera bacteria and guinea worms are pathogens.",
        # Rule iii's example: a modal (MD) and a passive.
        "Pneumonia may be caused by an infection or an injury to the lungs.",
    ],
)
def test_no_verb_phrase__auxiliaries_and_modals_count_without_attribute_ruler(sentence: str) -> None:
    (verdict,) = filter_sentences([sentence])
    assert "no_verb_phrase" not in verdict.rules


def test_load_pipeline__tags_without_parser_lemmatizer_or_attribute_ruler() -> None:
    nlp = load_pipeline()
    assert {"parser", "lemmatizer", "attribute_ruler"}.isdisjoint(nlp.component_names)
    assert [t.tag_ for t in nlp("Ions are charged atoms.")] == ["NNS", "VBP", "VBN", "NNS", "."]


def test_load_pipeline__matrix_products_through_numpy_not_blis() -> None:
    nlp = load_pipeline()
    # tok2vec and tagger run on every sentence (NER on about 3%; its output layer keeps spaCy's ops)
    for name in ("tok2vec", "tagger"):
        assert all(node.ops.use_blis is False for node in nlp.get_pipe(name).model.walk()), name


def test_sentence_view__skips_whitespace_tokens_and_reads_person_entities() -> None:
    nlp = load_pipeline()
    doc = nlp.get_pipe("ner")(nlp("Charles  Darwin studied the finches of the Galapagos."))
    view = SentenceView.from_span(doc[:])
    assert view.texts[:3] == ("Charles", "Darwin", "studied")
    assert len(view.texts) == len(view.tags) == len(view.lowers) == len(view.punct)
    assert view.words == ("Charles", "Darwin", "studied", "the", "finches", "of", "the", "Galapagos.")
    assert ("Charles", "Darwin") in view.persons
    assert "first_name" in fired_rules(doc[:], FilterOptions())


def test_fired_rules__without_entities_first_name_cannot_fire() -> None:
    nlp = load_pipeline()
    doc = nlp.get_pipe("ner")(nlp("Charles Darwin proposed the theory of evolution by natural selection."))
    assert fired_rules(doc[:], FilterOptions()) == ["first_name"]
    assert fired_rules(doc[:], FilterOptions(), entities=False) == []
