"""Tests for exports/factories.py."""

from __future__ import annotations

import pytest

from exports.factories import (
    FORMATS,
    FORMATTERS,
    VERSIONS,
    UnknownFormatError,
    create_formatter,
    create_writer,
    parse_formats,
)


def test_parse_formats__canonical_order_and_unknown_raises():
    assert parse_formats("parquet, csv") == ("csv", "parquet")
    with pytest.raises(UnknownFormatError, match="'xlsx'"):
        parse_formats("csv,xlsx")
    with pytest.raises(UnknownFormatError, match="no format"):
        parse_formats("")


def test_formatters_table__covers_every_version_and_format():
    for versions in VERSIONS.values():
        for version in versions:
            for fmt in FORMATS:
                assert (version.name, fmt) in FORMATTERS
                assert create_writer(fmt).extension == fmt


def test_create_formatter__unknown_pair_raises():
    with pytest.raises(UnknownFormatError, match="'syllabusqa' in format 'xml'"):
        create_formatter("syllabusqa", "xml")
    with pytest.raises(UnknownFormatError):
        create_writer("xml")
