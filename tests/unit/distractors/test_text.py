from distractors.text import has_number, is_answer_variant, is_expression, normalize, tokenize, units_in


def test_normalize__case_space_and_end_punctuation():
    assert normalize("  Activation   Energy. ") == "activation energy"


def test_tokenize__keeps_decimals_hyphens_and_percent():
    assert tokenize("A 3.5-kg mass lost 20% of its carbon-14!") == [
        "a",
        "3.5-kg",
        "mass",
        "lost",
        "20%",
        "of",
        "its",
        "carbon-14",
    ]


def test_is_expression__rejects_emoji_and_long_phrases():
    assert is_expression("chemical element")
    assert not is_expression("👶🏻")
    assert not is_expression("one two three four five six seven")


def test_has_number__digits_and_number_words():
    assert has_number(["about", "seven", "days"])
    assert has_number(["12"])
    assert not has_number(["oxygen"])


def test_units_in__symbols_only_after_a_number():
    assert units_in(tokenize("it weighs 5 kg and moves 3 m per second")) == {"kg", "m", "second"}
    assert units_in(tokenize("plan a trip")) == frozenset()


def test_is_answer_variant__plural_and_case():
    assert is_answer_variant("electrons", "Electron")
    assert is_answer_variant("activation energy", "activation energies")
    assert not is_answer_variant("electrons", "protons")
