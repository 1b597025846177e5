"""The one table mapping (dataset version, file format) to a formatter and a writer.

A record kind has one or more dataset versions: SyllabusQA-style QA pairs have one; SciQ-style MCQs
have the multiple-choice version (no passage) and the direct-answer version (with passage), written to
their own sub-folders of a release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from exports.formatters import (
    DirectAnswerFormatter,
    Formatter,
    MultipleChoiceCsvFormatter,
    MultipleChoiceFormatter,
    SyllabusQACsvFormatter,
    SyllabusQANestedFormatter,
)
from exports.writers import CsvWriter, JsonlWriter, ParquetWriter, Writer

FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")


class UnknownFormatError(ValueError):
    """A format or dataset version that no formatter or writer serves."""


@dataclass(frozen=True)
class DatasetVersion:
    """One published version of a dataset.

    Attributes:
        name: version name used in manifests (``syllabusqa``, ``multiple_choice``, ``direct_answer``).
        folder: sub-folder of the release ("" for the top level).
    """

    name: str
    folder: str


VERSIONS: Mapping[str, tuple[DatasetVersion, ...]] = {
    "qa": (DatasetVersion("syllabusqa", ""),),
    "mcq": (
        DatasetVersion("multiple_choice", "multiple_choice"),
        DatasetVersion("direct_answer", "direct_answer"),
    ),
}

FORMATTERS: Mapping[tuple[str, str], type[Formatter]] = {
    ("syllabusqa", "csv"): SyllabusQACsvFormatter,
    ("syllabusqa", "jsonl"): SyllabusQANestedFormatter,
    ("syllabusqa", "parquet"): SyllabusQANestedFormatter,
    ("multiple_choice", "csv"): MultipleChoiceCsvFormatter,
    ("multiple_choice", "jsonl"): MultipleChoiceFormatter,
    ("multiple_choice", "parquet"): MultipleChoiceFormatter,
    ("direct_answer", "csv"): DirectAnswerFormatter,
    ("direct_answer", "jsonl"): DirectAnswerFormatter,
    ("direct_answer", "parquet"): DirectAnswerFormatter,
}

WRITERS: Mapping[str, type[Writer]] = {
    "csv": CsvWriter,
    "jsonl": JsonlWriter,
    "parquet": ParquetWriter,
}


def parse_formats(formats: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Return the requested formats in canonical order, e.g. ``"parquet,csv"`` -> ``("csv", "parquet")``.

    Raises:
        UnknownFormatError: an unknown or empty format list.
    """
    names = [f.strip().lower() for f in (formats.split(",") if isinstance(formats, str) else formats)]
    names = [n for n in names if n]
    unknown = sorted(set(names) - set(FORMATS))
    if unknown:
        raise UnknownFormatError(f"unknown format(s) {unknown}; choose from {', '.join(FORMATS)}")
    if not names:
        raise UnknownFormatError(f"no format requested; choose from {', '.join(FORMATS)}")
    return tuple(f for f in FORMATS if f in names)


def versions_for(kind: str) -> tuple[DatasetVersion, ...]:
    """Return the dataset versions of a record kind (``qa`` or ``mcq``).

    Raises:
        UnknownFormatError: an unknown kind.
    """
    try:
        return VERSIONS[kind]
    except KeyError as e:
        raise UnknownFormatError(f"unknown record kind {kind!r}; choose from {sorted(VERSIONS)}") from e


def create_formatter(
    version: str, fmt: str, *, seed: int = 0, extra_kinds: Optional[Mapping[str, str]] = None
) -> Formatter:
    """Return the formatter serving ``version`` in ``fmt``.

    Raises:
        UnknownFormatError: no formatter is registered for the pair.
    """
    try:
        cls = FORMATTERS[(version, fmt)]
    except KeyError as e:
        raise UnknownFormatError(f"no formatter for version {version!r} in format {fmt!r}") from e
    return cls(seed=seed, extra_kinds=extra_kinds)


def create_writer(fmt: str) -> Writer:
    """Return the writer for ``fmt``.

    Raises:
        UnknownFormatError: no writer is registered for the format.
    """
    try:
        return WRITERS[fmt]()
    except KeyError as e:
        raise UnknownFormatError(f"no writer for format {fmt!r}; choose from {', '.join(WRITERS)}") from e
