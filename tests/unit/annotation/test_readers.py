"""Pure tests of the dataset readers: real releases parse; malformed files name file, row and problem."""

import csv
import json
import shutil
from pathlib import Path

import pytest

from annotation.importers.documents import read_document, split_paragraphs
from annotation.importers.errors import ImportDataError
from annotation.importers.mcq import read_arc, read_sciq
from annotation.importers.syllabusqa import read_syllabi
from annotation.importers.syllabusqa_csv import COLUMNS, QA_COLUMNS, read_qa_rows, read_split_csv


def _mini_release(tmp_path: Path, rows: list[dict], syllabus_text: bytes = b"Office hours\rMonday") -> Path:
    root = tmp_path / "release"
    split_dir = root / "data" / "dataset_split"
    split_dir.mkdir(parents=True)
    text_dir = root / "syllabi" / "syllabi_redacted" / "text"
    text_dir.mkdir(parents=True)
    (text_dir / "bio.txt").write_bytes(syllabus_text)
    for split in ("train", "val", "test"):
        with (split_dir / f"{split}.csv").open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS)
            writer.writeheader()
            for row in rows if split == "train" else []:
                writer.writerow({c: row.get(c, "") for c in COLUMNS})
    return root


def _row(**kw: str) -> dict:
    base = {
        "id": "q1",
        "syllabus_name": "bio",
        "question_type": "single factual",
        "question": "When?",
        "answer": "Monday",
        "answer_span_1": "Monday",
    }
    return {**base, **kw}


def test_read_qa_rows__unknown_type_names_file_and_line(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row(), _row(id="q2", question_type="trivia")])
    with pytest.raises(ImportDataError, match=r"train.csv line 3: unknown question type 'trivia'"):
        read_qa_rows(root)


def test_read_qa_rows__line_numbers_count_embedded_newlines(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row(question="Line one\nline two?"), _row(id="q2", question_type="bad")])
    with pytest.raises(ImportDataError, match=r"train.csv line 4:"):
        read_qa_rows(root)


def test_read_qa_rows__missing_column(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row()])
    path = root / "data" / "dataset_split" / "val.csv"
    path.write_text("id,question\n")
    with pytest.raises(ImportDataError, match=r"val.csv line 1: missing column\(s\) syllabus_name"):
        read_qa_rows(root)


def test_read_qa_rows__duplicate_id(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row(), _row()])
    with pytest.raises(ImportDataError, match=r"id 'q1' already used at train.csv line 2"):
        read_qa_rows(root)


def test_read_qa_rows__not_utf8_names_file_and_line(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row(), _row(id="q2", question="Caf\u00e9 hours?")])
    path = root / "data" / "dataset_split" / "train.csv"
    path.write_bytes(path.read_bytes().replace("\u00e9".encode(), "\u00e9".encode("mac_roman")))
    with pytest.raises(ImportDataError, match=r"train.csv line 3: not UTF-8 \(byte 0x8e\)"):
        read_qa_rows(root)


def test_read_qa_rows__malformed_csv_names_file_and_line(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row(), _row(id="q2", question="When?" * 30_000)])
    with pytest.raises(ImportDataError, match=r"train.csv line 3: malformed CSV \(field larger than"):
        read_qa_rows(root)


def test_read_split_csv__rows_in_file_order_with_start_lines(tmp_path: Path) -> None:
    root = _mini_release(
        tmp_path,
        [_row(question="Two\nlines?", answer_span_3="Monday"), _row(id=" q2 ", reasoning_step_1="As said")],
    )
    first, second = read_split_csv(root / "data" / "dataset_split" / "train.csv")
    assert (first.split, first.line, first.source) == ("train", 2, "train.csv line 2")
    assert first.spans == ("Monday", "", "Monday") and first.steps == ()
    assert (second.id, second.line, second.steps) == ("q2", 4, ("As said",))


def test_read_split_csv__short_row_and_fewer_columns_read_as_empty(tmp_path: Path) -> None:
    path = tmp_path / "test.csv"
    path.write_text("id,syllabus_name,question_type,question,answer\nq1,bio,yes/no\n", encoding="utf-8")
    with pytest.raises(ImportDataError, match=r"test.csv line 1: missing column\(s\) answer_span_1"):
        read_split_csv(path)
    (row,) = read_split_csv(path, columns=QA_COLUMNS)
    assert (row.question, row.answer, row.spans, row.steps) == ("", "", (), ())


def test_read_syllabi__missing_file(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row()])
    with pytest.raises(ImportDataError, match=r"syllabus text file for 'chem' not found"):
        list(read_syllabi(root, {"chem"}))


def test_read_syllabi__bad_encoding(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row()], syllabus_text="Caf\u00e9 hours".encode())
    with pytest.raises(ImportDataError, match=r"bio.txt: the file is UTF-8, not Mac Roman"):
        list(read_syllabi(root, {"bio"}))


def test_read_syllabi__mac_roman_cr(tmp_path: Path) -> None:
    root = _mini_release(tmp_path, [_row()], syllabus_text="T\u00fcbingen\rMonday".encode("mac_roman"))
    (record,) = read_syllabi(root, {"bio"})
    assert record.text == "T\u00fcbingen\nMonday"
    assert record.pdf_path is None


def test_read_qa_rows__real_release(shared_data) -> None:
    rows = read_qa_rows(shared_data("syllabusqa"))
    assert len(rows) == 5078
    by_split = {s: sum(1 for r in rows if r.split == s) for s in ("train", "val", "test")}
    assert by_split == {"train": 3018, "val": 957, "test": 1103}


def test_read_sciq__real_counts(shared_data) -> None:
    records = read_sciq(shared_data("sciq"))
    assert len(records) == 13679
    assert sum(1 for r in records if not r.passage.strip()) == 1427
    assert all(len(r.distractors) == 3 for r in records)


def test_read_sciq__missing_field(tmp_path: Path) -> None:
    for name in ("train.json", "valid.json", "test.json"):
        (tmp_path / name).write_text(json.dumps([{"question": "q", "correct_answer": "a"}]))
    with pytest.raises(ImportDataError, match=r"train.json: record 0: missing field\(s\) distractor1"):
        read_sciq(tmp_path)


def test_read_arc__real_counts(shared_data) -> None:
    records = read_arc(shared_data("arc"))
    assert len(records) == 7787
    assert all(r.answer not in r.distractors for r in records)


def test_read_arc__bad_answer_key(tmp_path: Path, shared_data) -> None:
    root = tmp_path / "arc"
    shutil.copytree(shared_data("arc"), root)
    path = root / "ARC-Easy" / "ARC-Easy-Dev.jsonl"
    lines = path.read_text().splitlines()
    item = json.loads(lines[1])
    item["answerKey"] = "Z"
    lines[1] = json.dumps(item)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ImportDataError, match=r"ARC-Easy-Dev.jsonl line 2: answerKey 'Z' not among choices"):
        read_arc(root)


def test_split_paragraphs__offsets_point_into_text() -> None:
    text = "First paragraph here.\n\n\n  Second one\nspans lines.\n\nx"
    paragraphs = split_paragraphs(text, min_chars=5)
    assert [p.text for p in paragraphs] == ["First paragraph here.", "Second one\nspans lines."]
    for p in paragraphs:
        assert text[p.start : p.start + len(p.text)] == p.text


def test_read_document__unsupported_suffix(tmp_path: Path) -> None:
    path = tmp_path / "notes.docx"
    path.write_bytes(b"PK")
    with pytest.raises(ImportDataError, match=r"unsupported file type '.docx'"):
        read_document(path)
