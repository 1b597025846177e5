from distractors.knowledge import mine_generalising_concepts


def test_wordnet__heart_organ_sense_and_liver_share_organ(wordnet):
    heart_organ = wordnet.synset("heart.n.02")  # heart.n.01 is "the locus of feelings and intuitions"
    liver_organ = wordnet.synset("liver.n.01")
    assert "organ" in heart_organ.definition()
    organ = wordnet.synset("organ.n.01")
    assert organ in heart_organ.closure(lambda s: s.hypernyms())
    assert organ in liver_organ.closure(lambda s: s.hypernyms())


def test_info__heart_and_liver_are_siblings_nitrogen_and_oxygen_share_element(knowledge, wordnet):
    heart, liver, newspaper = knowledge.info("heart"), knowledge.info("liver"), knowledge.info("newspaper")
    assert wordnet.synset("internal_organ.n.01") in heart.hyper1 & liver.hyper1
    assert wordnet.synset("organ.n.01") in heart.hyper2 & liver.hyper2
    assert not heart.hyper1 & newspaper.hyper1
    nitrogen, oxygen = knowledge.info("nitrogen"), knowledge.info("oxygen")
    assert wordnet.synset("chemical_element.n.01") in nitrogen.hyper1 & oxygen.hyper1


def test_info__plural_and_multiword_expressions(knowledge, wordnet):
    assert wordnet.synset("electron.n.01") in knowledge.info("electrons").senses
    assert wordnet.synset("energy.n.01") in knowledge.info("activation energy").hyper1
    assert knowledge.info("qwzx").senses == frozenset()


def test_info__kb_links_parts_of_one_whole(knowledge, wordnet):
    # WordNet meronymy: the heart and the aorta are parts of the circulatory system's neighbourhood.
    heart = knowledge.info("heart")
    assert wordnet.synset("circulatory_system.n.01") in heart.kb1


def test_siblings__liver_for_heart_oxygen_for_nitrogen(knowledge):
    assert "liver" in knowledge.siblings("heart")
    assert "oxygen" in knowledge.siblings("nitrogen")


def test_mine_generalising_concepts__most_specific_shared_concepts(knowledge):
    concepts = mine_generalising_concepts(
        knowledge,
        [["oxygen", "hydrogen", "calcium"], ["liver", "lung", "kidney"], ["helium", "carbon", "sodium"]],
        top_k=5,
    )
    assert concepts[0] == "chemical_element.n.01"
    assert "internal_organ.n.01" in concepts  # liver, lung and kidney are all internal organs
    assert "entity.n.01" not in concepts


def test_mine_generalising_concepts__equal_counts_ordered_by_name(knowledge):
    # Each set has exactly one most specific shared concept, each seen once: a four-way tie.
    sets = [["liver", "lung", "kidney"], ["oxygen", "hydrogen", "calcium"], ["dog", "cat", "horse"]]
    concepts = mine_generalising_concepts(knowledge, sets, top_k=30)
    assert concepts == sorted(concepts)
    assert concepts == mine_generalising_concepts(knowledge, list(reversed(sets)), top_k=30)
