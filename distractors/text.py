"""Text helpers shared by the distractor features: normalisation, tokens, numbers and units.

Every feature compares expressions token by token, so the same tokenizer must be used when building the
candidate set, when training and when suggesting; it lives here.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

_TOKEN_RE = re.compile(r"[a-z0-9°%]+(?:[-'./][a-z0-9]+)*%?", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")
_NUMBER_RE = re.compile(r"^\d+(?:[.,/]\d+)*(?:st|nd|rd|th|%)?$")
# A candidate expression is kept only when it is made of these characters (drops emoji, punctuation runs).
_EXPRESSION_RE = re.compile(r"^[a-z0-9][a-z0-9 '\-./°%]*$")

NUMBER_WORDS: frozenset[str] = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred "
    "thousand million billion trillion half quarter third twice double triple".split()
)


def normalize(expression: str) -> str:
    """Lowercase and collapse whitespace so that 'Oxygen ' and 'oxygen' are one candidate."""
    return _SPACE_RE.sub(" ", expression.strip().lower()).strip(" .,;:!?\"'()[]")


def tokenize(text: str) -> list[str]:
    """Split text into lowercase word tokens (hyphenated words, decimals and '5%' stay whole)."""
    return [t.lower() for t in _TOKEN_RE.findall(text)]


def is_expression(text: str) -> bool:
    """Tell whether a normalised string is a plausible answer expression (letters/digits, <= 6 tokens)."""
    return bool(_EXPRESSION_RE.match(text)) and len(text) <= 60 and text.count(" ") < 6


def is_number_token(token: str) -> bool:
    """Tell whether a token is numeric ('42', '3.5', '1/2', '4th', 'seven')."""
    return bool(_NUMBER_RE.match(token)) or token in NUMBER_WORDS


def has_number(tokens: list[str]) -> bool:
    """Tell whether any token is numeric."""
    return any(is_number_token(t) for t in tokens)


@functools.lru_cache(maxsize=1)
def units_of_measure() -> frozenset[str]:
    """Return the committed list of units of measure (distractors/data/units.txt)."""
    text = resources.files("distractors").joinpath("data/units.txt").read_text(encoding="utf-8")
    return frozenset(
        line.strip().lower() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def units_in(tokens: list[str]) -> frozenset[str]:
    """Return the units of measure mentioned in the tokens.

    One-letter unit symbols ('m', 's', 'a') are counted only right after a number, because on their own
    they are far more often words or letters than units.
    """
    units = units_of_measure()
    found = set()
    for i, token in enumerate(tokens):
        if token not in units:
            continue
        if len(token) <= 2 and not (i > 0 and is_number_token(tokens[i - 1])):
            continue
        found.add(token)
    return frozenset(found)


def _singular(token: str) -> str:
    for suffix, replacement in (("ies", "y"), ("es", ""), ("s", "")):
        if token.endswith(suffix) and len(token) > len(suffix) + 2:
            return token[: -len(suffix)] + replacement
    return token


def is_answer_variant(answer: str, candidate: str) -> bool:
    """Tell whether a candidate is the answer itself up to case or a plural ending (never a distractor)."""
    a, c = normalize(answer), normalize(candidate)
    if a == c:
        return True
    a_tokens, c_tokens = a.split(" "), c.split(" ")
    return len(a_tokens) == len(c_tokens) and [_singular(t) for t in a_tokens] == [
        _singular(t) for t in c_tokens
    ]
