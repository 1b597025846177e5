"""The filters app's public commands on stored data: filter_sentences, filter_passages, run_qc."""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Passage, QAPair
from tests.factories import make_corpus, make_document

pytestmark = pytest.mark.django_db


def _lines(*args: str, stdin: str | None = None, monkeypatch=None) -> list[dict]:
    out = StringIO()
    call_command(*args, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines() if line.startswith("{")]


def test_filter_sentences__json_lines_with_every_rule(tmp_path: Path) -> None:
    path = tmp_path / "sentences.txt"
    path.write_text("Water boils at 100 degrees Celsius at sea level.\nWhy do we study this?\n")
    first, second = _lines("filter_sentences", "--input", str(path), "--json")
    assert first == {
        "text": "Water boils at 100 degrees Celsius at sea level.",
        "accepted": True,
        "rules": [],
    }
    assert second["accepted"] is False and "question_or_exclamation" in second["rules"]


def test_filter_sentences__missing_file() -> None:
    with pytest.raises(CommandError, match="nowhere.txt: no such file"):
        call_command("filter_sentences", "--input", "/nonexistent/nowhere.txt")


def test_filter_passages__stores_verdicts_and_resumes() -> None:
    call_command("load_demo", stdout=StringIO())
    # load_demo filters the demo passages itself (to open its SciQ batch): start again from pending.
    Passage.objects.filter(corpus__name="demo-textbook").update(
        filter_status=Passage.FilterStatus.PENDING, filtered_at=None
    )
    (summary,) = _lines("filter_passages", "demo-textbook", "--sync")
    assert summary["status"] == "done" and summary["judged"] == 24 and summary["pending"] == 0
    assert summary["accepted"] + summary["rejected"] == 24
    assert not Passage.objects.filter(corpus__name="demo-textbook", filtered_at=None).exists()
    (again,) = _lines("filter_passages", "demo-textbook", "--sync")
    assert again["judged"] == 0  # nothing pending: a re-run does no work twice


def test_run_qc__input_file_looks_up_syllabus(tmp_path: Path) -> None:
    make_document(
        corpus=make_corpus(), name="bio", text="Office hours: Tuesdays 2:00-3:30 pm in Science Hall."
    )
    rows = [
        {
            "id": "a",
            "syllabus_name": "bio",
            "question_type": "single factual",
            "question": "When are office hours?",
            "answer": "On Tuesdays, 2:00-3:30 pm",  # 3 words or more: the authors' length rule passes it
            "answer_spans": ["office hours: tuesdays 2:00-3:30 pm"],
            "reasoning_steps": [],
        },
        {
            "id": "b",
            "syllabus_name": "bio",
            "question_type": "yes/no",
            "question": "Are office hours on Tuesday?",
            "answer": "Yes, they are.",
            "answer_spans": ["Tuesdays 2:00-3:30 pm"],
            "reasoning_steps": [],
        },
        {
            "id": "c",
            "question": "Which organelle releases energy from food molecules?",
            "answer": "mitochondria",
            "passage": "Mitochondria release energy.",
            "distractors": ["ribosome", "ribosome", "mitochondria"],
        },
    ]
    path = tmp_path / "qa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    a, b, c = _lines("run_qc", "--input", str(path), "--json")
    assert a == {"id": "a", "flags": [], "normalized_answer": "On Tuesdays, 2:00-3:30 pm"}
    assert b["flags"] == ["yes_no_answer_not_single_word"] and b["normalized_answer"] == "Yes"
    assert {"duplicate_distractor", "distractor_equals_answer"} <= set(c["flags"])


def test_run_qc__bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "qa.jsonl"
    path.write_text('{"id": "a", "question": "q"}\n{not json\n')
    with pytest.raises(CommandError, match="qa.jsonl line"):
        call_command("run_qc", "--input", str(path))


def test_run_qc__corpus_saves_flags(shared_data) -> None:
    call_command("import_syllabusqa", str(shared_data("syllabusqa")), stdout=StringIO())
    (summary,) = _lines("run_qc", "--corpus", "syllabusqa")
    assert summary["pairs"] == 5078
    assert 0 < summary["flags"]["span_not_in_document"] < 1500
    flagged = QAPair.objects.exclude(qc_flags=[]).count()
    assert flagged == summary["flagged"]
