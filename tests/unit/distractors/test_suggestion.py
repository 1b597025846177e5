from distractors.suggestion import ranked_suggestions


def test_ranked_suggestions__equal_scores_ordered_by_text():
    scored = [("neutrons", 1.0), ("ions", 0.7), ("atoms", 1.0), ("protons", 1.0)]
    out = ranked_suggestions(scored, top=3)
    assert [(s.text, s.score, s.rank) for s in out] == [
        ("atoms", 1.0, 1),
        ("neutrons", 1.0, 2),
        ("protons", 1.0, 3),
    ]
    assert ranked_suggestions(list(reversed(scored)), top=3) == out


def test_ranked_suggestions__noise_below_reported_precision_does_not_reorder():
    # Forest probabilities summed in another order can differ in the last bits.
    a = ranked_suggestions([("oxygen", 0.8500000000000001), ("argon", 0.85)])
    b = ranked_suggestions([("oxygen", 0.85), ("argon", 0.8500000000000001)])
    assert [s.text for s in a] == [s.text for s in b] == ["argon", "oxygen"]
    assert [s.score for s in a] == [0.85, 0.85]


def test_ranked_suggestions__top_none_keeps_all():
    assert [s.rank for s in ranked_suggestions([("b", 0.1), ("a", 0.2)])] == [1, 2]
