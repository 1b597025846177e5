"""Section filtering of filters/sections.py (LFQA appendix A.5)."""

from __future__ import annotations

from filters.sections import (
    Section,
    SectionOptions,
    filter_document,
    filter_sections,
    is_dropped_title,
    split_sections,
)


def words(n: int, word: str = "cell") -> str:
    return " ".join([word] * n)


def count(text: str) -> int:
    return len(text.split())


DOC = (
    f"Intro text {words(8)}\n== Biology ==\n{words(300)}\n"
    "== See also ==\nOther pages\n# References\n[1] A book\n"
)


def test_split_sections__wiki_and_markdown_headings() -> None:
    sections = split_sections(DOC)
    assert [s.title for s in sections] == ["", "Biology", "See also", "References"]
    assert sections[3].text == "[1] A book"


def test_is_dropped_title__case_and_punctuation_ignored() -> None:
    assert is_dropped_title("  External Links: ")
    assert is_dropped_title("Further reading")
    assert not is_dropped_title("Cell biology")


def test_filter_document__drops_sections_and_short_documents() -> None:
    result = filter_document(DOC, SectionOptions(min_document_tokens=100), count_tokens=count)
    assert result.accepted
    assert result.dropped_titles == ("See also", "References")
    assert result.token_count == 310
    short = filter_document(DOC, SectionOptions(min_document_tokens=1000), count_tokens=count)
    assert not short.accepted and short.chunks == ()


def test_filter_sections__merges_short_sections_into_chunks() -> None:
    sections = [Section(f"s{i}", words(100)) for i in range(5)]
    result = filter_sections(
        sections, SectionOptions(min_document_tokens=0, min_chunk_tokens=256, max_chunk_tokens=400), count
    )
    assert [count(c) for c in result.chunks] == [300, 200]


def test_filter_document__default_spacy_token_count() -> None:
    result = filter_document(
        "== Notes ==\nx\n== Body ==\nCells divide.", SectionOptions(min_document_tokens=3)
    )
    assert result.accepted and result.token_count == 3
