"""Privacy gate for releases: find e-mail addresses, phone numbers and raw crowd-worker ids.

SyllabusQA's release holds no crowd account ids and was screened for identifying information (paper,
"Ethics"); crowdqa enforces the same before a release is published. Worker ids may appear only as a
stable salted pseudonym (:func:`crowd.pseudonyms.pseudonymize_worker`).

Patterns (deliberately conservative, so ordinary text does not block a release):

* e-mail: ``local@domain.tld``;
* phone: North-American ``(413) 555-0123`` / ``413-555-0123`` / ``413.555.0123`` and international
  ``+44 20 7946 0958`` forms; bare digit runs, dates, times and ISBNs do not match;
* each platform's raw worker ids, as its traits describe them (``PlatformTraits.worker_id``): an MTurk
  worker id is ``A`` then 12-20 letters or digits, with at least one digit, in either case (so words
  such as ``ACCOMMODATIONS`` do not match, and an id a worker typed in lowercase does); a Prolific
  participant id is exactly 24 lowercase hex characters;
* obfuscated e-mail: ``name [at] host [dot] com``, ``name (at) host (dot) edu``, ``name at host dot com``;
* IP addresses: IPv4 and IPv6, as :mod:`ipaddress` reads them (a time such as ``10:30:15`` is not one);
* a ``worker`` column value that is not a pseudonym (``w_`` + 16 hex) is a raw worker id.

Public offices' contacts do occur in real data (SyllabusQA quotes university help-line numbers and
addresses); a person reviews such values and passes them as ``allow``.
"""

from __future__ import annotations

import csv
import ipaddress
import json
import logging
import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from crowd.providers.traits import worker_id_patterns
from crowd.pseudonyms import PSEUDONYM

logger = logging.getLogger(__name__)

PLATFORM_IDS = worker_id_patterns()
"""Each platform's raw worker ids (its traits' ``worker_id``): MTurk's and Prolific's."""

PATTERNS: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    "phone": re.compile(
        r"(?<![\w+])(?:"
        r"(?:\+?1[\s.-]?)?\(\d{3}\)\s?\d{3}[\s.-]\d{4}"  # (413) 555-0123
        r"|(?:\+?1[\s.-])?\d{3}[.-]\d{3}[.-]\d{4}"  # 413-555-0123, 413.555.0123
        r"|\+\d{1,3}(?:[\s.-]?\d{2,4}){3,5}"  # +44 20 7946 0958
        r")(?!\w)"
    ),
    "email_obfuscated": re.compile(
        r"(?i)(?<![\w.+-])[a-z0-9._%+-]+\s*(?:[\[({<]\s*at\s*[\])}>]|\s+at\s+)\s*[a-z0-9-]+"
        r"(?:\s*(?:[\[({<]\s*dot\s*[\])}>]|\s+dot\s+|\.)\s*[a-z0-9-]+)*"
        r"\s*(?:[\[({<]\s*dot\s*[\])}>]|\s+dot\s+)\s*[a-z]{2,}\b"
    ),
    **{platform.kind: platform.pattern for platform in PLATFORM_IDS},
    "ipv4": re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"),
    "ipv6": re.compile(
        r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})(?![\w:])"
    ),
}
"""Personal-data patterns; ``ipv4``/``ipv6`` matches are kept only when :mod:`ipaddress` parses them."""

# Cheap necessary conditions, one per pattern. Python's re scans fast only from a literal or a single
# character class, so these let a clean 50 MB file pass in well under a second; the full pattern runs
# only where its gate fires.
_GATES: dict[str, re.Pattern[str]] = {
    "email": re.compile(r"@"),
    "phone": re.compile(r"\)\s?\d|\+\d|\d[.-]\d\d\d[.-]\d"),
    "email_obfuscated": re.compile(r"(?i)[\[({<]\s*at\s*[\])}>]|\sdot\s"),
    **{platform.kind: platform.gate for platform in PLATFORM_IDS},
    "ipv4": re.compile(r"\d\.\d+\.\d+\.\d"),
    "ipv6": re.compile(r"[0-9A-Fa-f]:[0-9A-Fa-f]*:"),
}

TEXT_SUFFIXES = {".csv", ".jsonl", ".json", ".md", ".txt"}


class PrivacyError(RuntimeError):
    """A release contains personal data; ``findings`` lists where."""

    def __init__(self, findings: list[PrivacyFinding]) -> None:
        self.findings = findings
        shown = "; ".join(f.describe() for f in findings[:5])
        more = f" (+{len(findings) - 5} more)" if len(findings) > 5 else ""
        super().__init__(f"release blocked: {len(findings)} privacy finding(s): {shown}{more}")


@dataclass(frozen=True)
class PrivacyFinding:
    """One match.

    Attributes:
        kind: ``email``, ``phone``, ``mturk_worker_id``, ``prolific_id`` or ``raw_worker_id``.
        file: file name relative to the scanned root.
        line: 1-based data row (CSV, JSONL, Parquet) or line (Markdown).
        column: the column, or None for Markdown.
        value: the matched text, masked in :meth:`describe` so logs do not repeat it.
    """

    kind: str
    file: str
    line: int
    column: Optional[str]
    value: str

    def describe(self) -> str:
        """Location and kind, with the value masked."""
        masked = self.value[:2] + "*" * max(0, len(self.value) - 4) + self.value[-2:]
        where = f"{self.file} line {self.line}" + (f" column {self.column}" if self.column else "")
        return f"{where}: {self.kind} {masked!r}"


def find_pii(text: str, kinds: Iterable[str] = tuple(PATTERNS)) -> list[tuple[str, str]]:
    """Return ``(kind, matched text)`` for every personal-data pattern match in ``text``.

    Args:
        text: any text.
        kinds: the pattern names to apply (default: all).
    """
    return [
        (kind, m.group(0))
        for kind in kinds
        for m in PATTERNS[kind].finditer(text)
        if kind not in ("ipv4", "ipv6") or _is_ip(m.group(0), kind)
    ]


def _is_ip(value: str, kind: str) -> bool:
    """True when ``value`` is an IP address (IPv6 needs three colons or ``::``, unlike a time "10:30:15")."""
    if kind == "ipv6" and value.count(":") < 3 and "::" not in value:
        return False
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return value not in ("::", "0.0.0.0")


def candidate_kinds(text: str) -> list[str]:
    """Return the pattern names that match somewhere in ``text`` (gated, so clean text is cheap)."""
    return [k for k, gate in _GATES.items() if gate.search(text) and find_pii_kind(text, k)]


def find_pii_kind(text: str, kind: str) -> bool:
    """True when pattern ``kind`` finds personal data in ``text`` (IP candidates are parsed)."""
    if kind not in ("ipv4", "ipv6"):
        return PATTERNS[kind].search(text) is not None
    return any(_is_ip(m.group(0), kind) for m in PATTERNS[kind].finditer(text))


# Item and document ids are generated by the platform (SyllabusQA's are 16 random alphanumerics, and
# val.csv has one, ``A5KN...``, that looks like an MTurk id), so id patterns are not applied to them.
ID_COLUMNS = frozenset({"id", "document_id"})
ID_KINDS = frozenset(platform.kind for platform in PLATFORM_IDS)
WORKER_COLUMN = "worker"


def _strings(value: object) -> Iterator[str]:
    """Every string inside a JSON value (lists and objects, at any depth)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _decode_text(raw: bytes) -> str:
    """A text file's content: UTF-8, or Mac Roman (SyllabusQA's syllabus texts) when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("mac_roman")


JSON_READ_CHARS = 1 << 20
SCAN_BATCH_CHARS = 8 << 20
"""Text scanned per batch of values: a file of any size is scanned in bounded memory."""


def _json_array_items(path: Path) -> Iterator[Any]:
    """The items of a JSON array file, decoded one at a time from a buffer of about 1 MB.

    Raises:
        ValueError: the file is not a JSON array (``json.JSONDecodeError`` or ``UnicodeDecodeError``).
    """
    decoder = json.JSONDecoder()
    with path.open(encoding="utf-8") as handle:
        buffer = handle.read(JSON_READ_CHARS)
        eof = not buffer
        pos = 0

        def fill(need_more: bool) -> bool:
            nonlocal buffer, pos, eof
            if eof:
                return False
            more = handle.read(JSON_READ_CHARS)
            eof = not more
            buffer = buffer[pos:] + more
            pos = 0
            return bool(more) or not need_more

        def skip() -> Optional[str]:
            nonlocal pos
            while True:
                while pos < len(buffer) and buffer[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buffer):
                    return buffer[pos]
                if not fill(True):
                    return None

        if skip() != "[":
            raise json.JSONDecodeError("not a JSON array", buffer, pos)
        pos += 1
        if skip() == "]":
            pos += 1
        else:
            while True:
                while True:
                    try:
                        item, end = decoder.raw_decode(buffer, pos)
                    except json.JSONDecodeError:
                        if not fill(True):
                            raise
                        continue
                    if end == len(buffer) and not eof and fill(True):
                        continue  # a number may go on in the next block
                    break
                pos = end
                yield item
                mark = skip()
                if mark == ",":
                    pos += 1
                    skip()
                    continue
                if mark == "]":
                    pos += 1
                    break
                raise json.JSONDecodeError("expected ',' or ']'", buffer, pos)
        if skip() is not None:
            raise json.JSONDecodeError("extra data after the array", buffer, pos)


def _is_record_array(path: Path) -> bool:
    """True when a JSON file is an array of objects (read through once, item by item)."""
    try:
        return all(isinstance(item, dict) for item in _json_array_items(path))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


Field = tuple[int, Optional[str], str]
"""``(line or row, column, text)`` of one string value of a release file (no column in plain text)."""


def _parquet_fields(path: Path) -> Iterator[Field]:
    """A Parquet file's string values column by column (a list of strings is one value)."""
    import pyarrow.parquet as pq  # only release files need it; crowd.models imports this module

    parquet = pq.ParquetFile(path)
    for name in parquet.schema_arrow.names:
        row = 0
        for batch in parquet.iter_batches(columns=[name]):
            for value in batch.column(0).to_pylist():
                row += 1
                if isinstance(value, list):
                    value = "\n".join(v for v in value if isinstance(v, str))
                if isinstance(value, str):
                    yield row, name, value


def _csv_fields(path: Path) -> Iterator[Field]:
    """A CSV file's cells, named by the header."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        for row_number, row in enumerate(reader, start=1):
            for column, value in zip(header, row, strict=False):
                yield row_number, column, value


def _jsonl_fields(path: Path) -> Iterator[Field]:
    """A JSONL file's values per line and key."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            for column, value in json.loads(line).items():
                if isinstance(value, (list, dict)):
                    # Nested values (e.g. suggestions_{split}.jsonl's lists of objects) are scanned too.
                    value = "\n".join(_strings(value))
                if isinstance(value, str):
                    yield number, column, value


def _json_array_fields(path: Path) -> Iterator[Field]:
    """A JSON array of objects (the original datasets' split files): scanned per field, like JSONL."""
    for number, record in enumerate(_json_array_items(path), start=1):
        for column, value in record.items():
            text = "\n".join(_strings(value))
            if text:
                yield number, column, text


def _fields(path: Path) -> Iterator[Field]:
    """Yield ``(line or row, column, text)`` for every string value of a release file."""
    if path.suffix == ".parquet":
        yield from _parquet_fields(path)
    elif path.suffix == ".csv":
        yield from _csv_fields(path)
    elif path.suffix == ".jsonl":
        yield from _jsonl_fields(path)
    elif path.suffix == ".json" and _is_record_array(path):
        yield from _json_array_fields(path)
    elif path.suffix in TEXT_SUFFIXES:
        for number, text in enumerate(_decode_text(path.read_bytes()).splitlines(), start=1):
            yield number, None, text


def _batches(
    fields: Iterator[tuple[int, Optional[str], str]], limit: int
) -> Iterator[list[tuple[int, Optional[str], str]]]:
    """The fields in consecutive batches of about ``limit`` characters."""
    batch: list[tuple[int, Optional[str], str]] = []
    size = 0
    for entry in fields:
        batch.append(entry)
        size += len(entry[2]) + 1
        if size >= limit:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def scan_file(
    path: Path, *, root: Optional[Path] = None, allow: Collection[str] = ()
) -> list[PrivacyFinding]:
    """Scan one release file (CSV, JSONL and Parquet per field; Markdown per line; others skipped).

    The file is read in batches of about :data:`SCAN_BATCH_CHARS` characters, so memory does not grow
    with the file.

    Args:
        path: the file.
        root: names in findings are relative to it.
        allow: matched values a person has reviewed and allowed (e.g. an office's public e-mail), compared
            case-insensitively.

    Returns:
        The findings: ``raw_worker_id`` (a ``worker`` value that is not a pseudonym) first, then the
        pattern matches, each in file order.
    """
    name = str(path.relative_to(root)) if root else path.name
    allowed = {a.lower() for a in allow}
    workers: list[PrivacyFinding] = []
    findings: list[PrivacyFinding] = []
    for batch in _batches(_fields(path), SCAN_BATCH_CHARS):
        workers.extend(
            PrivacyFinding("raw_worker_id", name, line, column, text)
            for line, column, text in batch
            if column == WORKER_COLUMN and text and not PSEUDONYM.match(text)
        )
        # Fast path: the patterns run once over the batch's values joined by NUL (which no pattern can
        # cross); only the kinds found there are then located value by value.
        kinds = candidate_kinds("\x00".join(text for _, column, text in batch if column != WORKER_COLUMN))
        if not kinds:
            continue
        for line, column, text in batch:
            if column == WORKER_COLUMN:
                continue
            for kind, value in find_pii(text, kinds):
                if column in ID_COLUMNS and kind in ID_KINDS:
                    continue
                if value.lower() not in allowed:
                    findings.append(PrivacyFinding(kind, name, line, column, value))
    return workers + findings


def scan_release(
    root: Path, *, allow: Collection[str] = (), skip: Iterable[str] = ("manifest.json", "index.json")
) -> list[PrivacyFinding]:
    """Scan every data file and the card of a release directory.

    Args:
        root: the release directory.
        allow: reviewed values to let through (see :func:`scan_file`).
        skip: file names not scanned (the manifest and index hold checksums and ids only).

    Returns:
        All findings, in file order.
    """
    skipped = set(skip)
    findings: list[PrivacyFinding] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name not in skipped:
            findings.extend(scan_file(path, root=root, allow=allow))
    return findings


def check_release_privacy(root: Path, *, allow: Collection[str] = ()) -> None:
    """Block a release that contains personal data.

    Raises:
        PrivacyError: at least one finding (each is logged with its value masked).
    """
    findings = scan_release(root, allow=allow)
    for finding in findings:
        logger.warning("privacy: %s", finding.describe())
    if findings:
        raise PrivacyError(findings)


class AllowFileError(ValueError):
    """A privacy allow file cannot be read; the message names the file (and line)."""


_INLINE_COMMENT = re.compile(r"\s#.*$")


def read_allow_file(path: Path) -> list[str]:
    """Read reviewed values for the privacy gate's allow list: one value per line.

    Why a file: the real SyllabusQA answers quote a handful of public office e-mails and help-line
    numbers; a reviewed list kept in the repository is easier to audit than repeated command options.
    Blank lines and lines starting with ``#`` are ignored, as is a trailing comment after whitespace
    (``413-545-5703  # disability services``); values never contain `` #``.

    Args:
        path: a UTF-8 text file.

    Returns:
        The values in file order, without duplicates.

    Raises:
        AllowFileError: the file is missing, unreadable or not UTF-8.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise AllowFileError(f"privacy allow file {path}: no such file") from e
    except IsADirectoryError as e:
        raise AllowFileError(f"privacy allow file {path}: is a directory, expected a text file") from e
    except UnicodeDecodeError as e:
        raise AllowFileError(f"privacy allow file {path}: not UTF-8 text (byte {e.start})") from e
    except OSError as e:
        raise AllowFileError(f"privacy allow file {path}: cannot read ({e.strerror})") from e
    values: dict[str, None] = {}
    for line in text.splitlines():
        value = _INLINE_COMMENT.sub("", line).strip()
        if value and not value.startswith("#"):
            values[value] = None
    return list(values)
