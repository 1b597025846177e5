import pytest

from distractors.mcq_data import McqDataError, load_arc, load_sciq


def test_load_arc__wrong_options_are_distractors(shared_data):
    questions = load_arc(shared_data("arc"), subsets=("ARC-Easy",), splits=("Dev",))
    assert len(questions) == 570
    for q in questions:
        assert q.answer not in q.distractors
        assert 2 <= len(q.distractors) <= 4


def test_load_sciq__three_distractors_and_support(shared_data):
    questions = load_sciq(shared_data("sciq"), "test")
    assert len(questions) == 1000
    assert all(len(q.distractors) == 3 for q in questions)
    assert sum(1 for q in questions if q.support) == 884


def test_load_arc__bad_answer_key_names_file_and_line(tmp_path):
    folder = tmp_path / "ARC-Easy"
    folder.mkdir()
    row = (
        '{"id": "x", "question": {"stem": "s?", "choices": [{"text": "a", "label": "A"}]}, "answerKey": "C"}'
    )
    (folder / "ARC-Easy-Dev.jsonl").write_text(row + "\n", encoding="utf-8")
    with pytest.raises(McqDataError, match=r"ARC-Easy-Dev.jsonl line 1: answerKey 'C'"):
        load_arc(tmp_path, subsets=("ARC-Easy",), splits=("Dev",))
