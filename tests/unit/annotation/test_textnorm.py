"""Pure tests of annotation.textnorm: decoding release files and locating spans."""

from pathlib import Path

import pytest

from annotation.textnorm import NormalizedIndex, collapse, decode_mac_roman, decode_utf8


def test_decode_mac_roman__cr_and_accents() -> None:
    raw = "T\u00fcbingen \u2013 office\rhours".encode("mac_roman")
    assert decode_mac_roman(raw, Path("x.txt")) == "T\u00fcbingen \u2013 office\nhours"


def test_decode_mac_roman__utf8_file_is_refused() -> None:
    with pytest.raises(ValueError, match="x.txt: the file is UTF-8, not Mac Roman"):
        decode_mac_roman("caf\u00e9".encode(), Path("x.txt"))


def test_decode_mac_roman__binary_is_refused() -> None:
    with pytest.raises(ValueError, match="control bytes"):
        decode_mac_roman(b"abc\x00\x01def", Path("x.txt"))


def test_decode_utf8__names_the_byte() -> None:
    with pytest.raises(ValueError, match=r"y.txt: not UTF-8 \(byte 3"):
        decode_utf8(b"abc\xff", Path("y.txt"))


def test_collapse__case_and_whitespace() -> None:
    assert collapse("  Office\n Hours\t2pm ") == "office hours 2pm"


def test_normalized_index_find__across_line_breaks() -> None:
    text = "Grading:\nMidterm   exam 1:\n15%\nFinal"
    found = NormalizedIndex(text).find("midterm exam 1: 15%")
    assert found is not None
    assert text[found[0] : found[1]] == "Midterm   exam 1:\n15%"


def test_normalized_index_find__missing_and_start() -> None:
    index = NormalizedIndex("a b a b")
    assert index.find("c") is None
    assert index.find("") is None
    assert index.find("a b", start=1) == (4, 7)
