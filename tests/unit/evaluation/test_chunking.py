"""Tests for evaluation/chunking.py (LangChain-style recursive character splitting)."""

from __future__ import annotations

import pytest

from evaluation.chunking import split_text


def test_split_text__chunks_respect_size_and_overlap_on_plain_words() -> None:
    words = " ".join(f"word{i:03d}" for i in range(200))  # 1599 characters, only spaces
    chunks = split_text(words, chunk_size=200, chunk_overlap=50)
    assert all(len(chunk) <= 200 for chunk in chunks)
    for left, right in zip(chunks, chunks[1:], strict=False):
        # the next chunk restarts inside the previous one's last 50 characters
        assert right.split()[0] in left[-50:]
    assert " ".join(chunks).split()[-1] == "word199"


def test_split_text__prefers_paragraph_breaks() -> None:
    text = "First paragraph is short.\n\nSecond paragraph is short too."
    assert split_text(text, chunk_size=40, chunk_overlap=10) == [
        "First paragraph is short.",
        "Second paragraph is short too.",
    ]


def test_split_text__long_word_falls_back_to_characters() -> None:
    chunks = split_text("x" * 25, chunk_size=10, chunk_overlap=2)
    assert all(len(chunk) <= 10 for chunk in chunks)
    assert chunks[0] == "x" * 10
    assert len(chunks) == 3


def test_split_text__rejects_overlap_not_smaller_than_size() -> None:
    with pytest.raises(ValueError, match="chunk_overlap=200"):
        split_text("abc", chunk_size=200, chunk_overlap=200)


def test_split_text__real_syllabus_chunks_cover_the_text(shared_data) -> None:
    root = shared_data("syllabusqa")
    path = next(iter(sorted((root / "syllabi" / "syllabi_redacted" / "text_utf8").glob("*.txt"))))
    text = path.read_text(encoding="utf-8")
    chunks = split_text(text, 200, 50)
    assert max(len(chunk) for chunk in chunks) <= 200
    assert all(chunk in text for chunk in chunks)
    covered = "".join(text.split())
    assert "".join("".join(chunks).split()).count(covered[:30]) >= 1
