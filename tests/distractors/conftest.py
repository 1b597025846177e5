"""Reuse the distractors unit-test fixtures (WordNet from Debian through NLTK)."""

from tests.unit.distractors.conftest import wordnet  # noqa: F401
