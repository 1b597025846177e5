"""Release files in the original datasets' own layouts, so the authors' code runs on a release unchanged.

* SyllabusQA (umass-ml4ed/SyllabusQA): beside the split CSVs, ``{split}.json`` as the authors made
  theirs (``pandas.read_csv(csv).to_json(orient="records", indent=2, force_ascii=False)``: the CSV's
  empty cells become ``null``, as in their files), and ``syllabi/syllabi_redacted/text/<name>.txt``
  (Mac Roman, CR line ends) with ``syllabi/syllabi_meta_info.csv`` (their columns; its text is stored as
  their file stores it: the Mac Roman bytes read as Latin-1, saved as UTF-8). On the published data
  these rebuild the authors' files byte for byte.
* SciQ (Welbl et al. 2017): ``sciq/{train,valid,test}.json``, a JSON array of objects with SciQ's keys
  in SciQ's order (``question, distractor3, distractor1, distractor2, correct_answer, support``),
  indented by 16 spaces with non-ASCII escaped, exactly as AllenAI's files are written.

The card section :func:`loader_notes` says which files serve which loader. Nothing here imports Django.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Optional

from annotation.importers import syllabusqa_csv
from exports.records import MCQRecord, QARecord

SYLLABI_TEXT_DIR = "syllabi/syllabi_redacted/text"
SYLLABI_META = "syllabi/syllabi_meta_info.csv"
SYLLABI_META_COLUMNS: tuple[str, ...] = (
    "name",
    "filename",
    "course",
    "major",
    "area",
    "university",
    "num_pages",
)
SCIQ_DIR = "sciq"


@dataclass(frozen=True)
class SourceDocument:
    """A syllabus as the authors' layout needs it.

    Attributes:
        name: the document name (``syllabus_name`` in the QA files; the text file's stem).
        text: the document text (LF line ends).
        meta: ``course``, ``major``, ``area``, ``university``, ``num_pages`` (strings; missing ones empty).
        meta_row: the row the document had in the source ``syllabi_meta_info.csv``, when imported from
            one; rows are written in that order, other documents after them by name.
    """

    name: str
    text: str
    meta: Mapping[str, str] = field(default_factory=dict)
    meta_row: Optional[int] = None


def _syllabusqa_csv_writer(handle: IO[str]) -> Any:
    writer = csv.writer(handle, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(syllabusqa_csv.COLUMNS)
    return writer


def write_syllabusqa_csv_row(writer: Any, record: QARecord) -> None:
    """One record as a row of the plain SyllabusQA CSV (no formula neutralising) that pandas reads."""
    row = record.to_syllabusqa_row()
    writer.writerow([row[c] for c in syllabusqa_csv.COLUMNS])


class SyllabusQAJsonWriter:
    """Writes one split's ``{split}.json`` from records given one at a time, in bounded memory.

    The records go to a plain CSV beside ``path`` (``<path>.csv.tmp``) as they come; :meth:`close` turns
    it into the authors' JSON with pandas in chunks (:func:`syllabusqa_json_from_csv`) and removes it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.scratch = path.with_name(path.name + ".csv.tmp")
        self.handle = self.scratch.open("w", encoding="utf-8", newline="")
        self.writer = _syllabusqa_csv_writer(self.handle)
        self.rows = 0

    def write(self, record: QARecord) -> None:
        """Append one record."""
        write_syllabusqa_csv_row(self.writer, record)
        self.rows += 1

    def close(self) -> int:
        """Write the JSON and return the number of rows."""
        self.handle.close()
        try:
            syllabusqa_json_from_csv(self.scratch, self.path)
        finally:
            self.scratch.unlink(missing_ok=True)
        return self.rows


JSON_CHUNK_ROWS = 20_000


def _common_dtypes(csv_path: Path, chunk_rows: int) -> dict[str, Any]:
    """Column -> the dtype pandas infers for the whole file, from the dtypes of its chunks.

    A column whose chunks are all of one dtype keeps it; integers with floats (a chunk with empty cells)
    are floats, as pandas joins them; any other mix reads as text (object).
    """
    import pandas as pd

    seen: dict[str, set[str]] = {}
    for chunk in pd.read_csv(csv_path, encoding="utf-8", chunksize=chunk_rows):
        for column, dtype in chunk.dtypes.items():
            seen.setdefault(str(column), set()).add(str(dtype))
    common: dict[str, Any] = {}
    for column, dtypes in seen.items():
        if len(dtypes) == 1:
            common[column] = dtypes.pop()
        elif dtypes <= {"int64", "float64"}:
            common[column] = "float64"
        else:
            common[column] = object
    return common


def syllabusqa_json_from_csv(csv_path: Path, path: Path, *, chunk_rows: int = JSON_CHUNK_ROWS) -> None:
    """Write the authors' JSON of a plain SyllabusQA CSV, reading it ``chunk_rows`` rows at a time.

    Why pandas: the authors' JSON is pandas' output over their CSV (empty cells and pandas' NA strings
    become ``null``, ``/`` is escaped as ``\\/``), and their loaders read the CSV through pandas too, so
    pandas is the one faithful way to write it. Each chunk is read with the dtypes pandas infers for the
    whole file (:func:`_common_dtypes`), so the chunks' JSON joined is the whole file's JSON.
    """
    import pandas as pd

    dtypes = _common_dtypes(csv_path, chunk_rows)
    chunks = pd.read_csv(csv_path, encoding="utf-8", chunksize=chunk_rows, dtype=dtypes)
    with path.open("w", encoding="utf-8") as handle:
        wrote = False
        for chunk in chunks:
            if chunk.empty:
                continue
            text = chunk.to_json(orient="records", indent=2, force_ascii=False)
            # "[\n  {...},\n  {...}\n]": chunks are joined inside one pair of brackets.
            handle.write(("," if wrote else "[") + text[1:-2])
            wrote = True
        if wrote:
            handle.write("\n]")
        else:
            empty = pd.read_csv(csv_path, encoding="utf-8")
            handle.write(empty.to_json(orient="records", indent=2, force_ascii=False))


def write_syllabusqa_json(records: Sequence[QARecord], path: Path) -> int:
    """Write one split as the authors' ``{split}.json`` and return the number of rows."""
    writer = SyllabusQAJsonWriter(path)
    for record in records:
        writer.write(record)
    return writer.close()


def to_mojibake(value: str) -> str:
    """Text as the authors' metadata file stores it: Mac Roman bytes read as Latin-1.

    Characters Mac Roman lacks are kept as they are (they have no such reading).
    """
    try:
        return value.encode("mac_roman").decode("latin-1")
    except UnicodeEncodeError:
        return value


def write_syllabi(documents: Iterable[SourceDocument], root: Path) -> dict[str, int]:
    """Write ``syllabi/syllabi_redacted/text/<name>.txt`` and ``syllabi/syllabi_meta_info.csv``.

    Texts are encoded Mac Roman with CR line ends (the release's own encoding, which the authors' code
    reads as ISO-8859-1); a character Mac Roman cannot hold becomes ``?`` and is counted. Each text is
    written as it comes (only the metadata rows are kept for the CSV), so ``documents`` may be a stream.

    Returns:
        ``{"documents": n, "unencodable_characters": m}``.
    """
    text_dir = root / SYLLABI_TEXT_DIR
    text_dir.mkdir(parents=True, exist_ok=True)
    unencodable = 0
    metas: list[SourceDocument] = []
    for document in documents:
        text = document.text.replace("\r\n", "\n").replace("\n", "\r")
        try:
            data = text.encode("mac_roman")
        except UnicodeEncodeError:
            data = text.encode("mac_roman", errors="replace")
            unencodable += sum(
                1 for ch in text if ch != "?" and ch.encode("mac_roman", errors="replace") == b"?"
            )
        (text_dir / f"{document.name}.txt").write_bytes(data)
        metas.append(SourceDocument(document.name, "", document.meta, document.meta_row))
    ordered = sorted(
        metas, key=lambda d: (d.meta_row is None, d.meta_row if d.meta_row is not None else 0, d.name)
    )
    with (root / SYLLABI_META).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow(SYLLABI_META_COLUMNS)
        for document in ordered:
            values = {"name": document.name, "filename": document.name, **document.meta}
            writer.writerow([to_mojibake(str(values.get(c) or "")) for c in SYLLABI_META_COLUMNS])
    return {"documents": len(metas), "unencodable_characters": unencodable}


def sciq_item(record: MCQRecord) -> dict[str, str]:
    """One question in SciQ's JSON shape.

    SciQ has exactly three distractors: the first three are ``distractor1..3``; a question with more
    (crowdqa's stage 2 may keep up to five) continues with ``distractor4``, ``distractor5``; a missing one
    is ``""``.
    """
    distractors = list(record.distractors) + [""] * max(0, 3 - len(record.distractors))
    item = {
        "question": record.question,
        "distractor3": distractors[2],
        "distractor1": distractors[0],
        "distractor2": distractors[1],
        "correct_answer": record.correct_answer,
        "support": record.support,
    }
    for i, text in enumerate(distractors[3:], start=4):
        item[f"distractor{i}"] = text
    return item


class SciQJsonWriter:
    """Writes one split in SciQ's JSON layout from records given one at a time.

    The bytes are ``json.dumps(items, indent=16)`` of the whole list: each item is dumped alone and
    indented one level (JSON strings hold no raw line break, so every line can be indented).
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = path.open("w", encoding="ascii", newline="")
        self.rows = 0

    def write(self, record: MCQRecord) -> None:
        """Append one question."""
        item = json.dumps(sciq_item(record), indent=16).replace("\n", "\n" + " " * 16)
        self.handle.write(("[\n" if not self.rows else ",\n") + " " * 16 + item)
        self.rows += 1

    def close(self) -> int:
        """Finish the file and return the number of questions."""
        self.handle.write("\n]\n" if self.rows else "[]\n")
        self.handle.close()
        return self.rows


def write_sciq_json(records: Sequence[MCQRecord], path: Path) -> int:
    """Write one split in SciQ's JSON layout and return the number of questions."""
    writer = SciQJsonWriter(path)
    for record in records:
        writer.write(record)
    return writer.close()


def loader_notes(kind: str, *, syllabi: Optional[Mapping[str, int]] = None) -> list[str]:
    """The card section that says which files serve which original loader."""
    if kind == "mcq":
        return [
            "## Files for SciQ's own format",
            "",
            "`sciq/train.json`, `sciq/valid.json`, `sciq/test.json` hold this release's train, val and test "
            "questions in SciQ's JSON layout (`question`, `distractor1`..`distractor3`, `correct_answer`, "
            "`support`; the same key order, indentation and escaping as AllenAI's files), so code written "
            "for SciQ reads them unchanged. A question with more than three distractors continues with "
            '`distractor4`, `distractor5`; `support` is `""` where no passage can be released.',
            "",
        ]
    lines = [
        "## Files for the SyllabusQA authors' code",
        "",
        "| file | serves |",
        "|---|---|",
        "| `{train,val,test}.csv` | the authors' `load_df` / `load_data` (pandas `read_csv`): point "
        "`data_dir` at this folder (`data_dir=.`) |",
        "| `{train,val,test}.json` | the authors' JSON files (`json.load`): the same rows, empty cells as "
        "`null` |",
        f"| `{SYLLABI_TEXT_DIR}/*.txt` | `load_syllabi` and the stats script (read from the folder they run "
        "in; Mac Roman, CR line ends, as released) |",
        f"| `{SYLLABI_META}` | the stats script (its text stored as the authors' file stores it: Mac Roman "
        "bytes read as Latin-1) |",
        "",
        "Run the authors' scripts from this folder. Their stats and quality-control scripts read the split "
        "CSVs from `./data/dataset_split/`: `mkdir -p data && ln -s .. data/dataset_split` gives them that "
        "path without copying.",
        "",
    ]
    if syllabi and syllabi.get("unencodable_characters"):
        lines += [
            f"{syllabi['unencodable_characters']:,} characters of the syllabus texts have no Mac Roman form "
            "and are written as `?` in the text files.",
            "",
        ]
    return lines
