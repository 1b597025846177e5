"""Integrity of the held-out labelled sentences (tests/data/filters/heldout_sentences.jsonl).

Why: the held-out set gives the sentence filter's unbiased score only if it is what the guide says it
is: 200 rows drawn by a fixed command, sharing no passage with the dev set, labelled with the guide's
rule codes. These tests check the file and its re-creation only, never a filter result.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data" / "filters"
HELDOUT = DATA / "heldout_sentences.jsonl"
DEV = DATA / "labelled_sentences.jsonl"
GUIDE = DATA / "LABELLING_GUIDE.md"
FIELDS = {"id", "source", "text", "accepted", "rules"}


def _load_draw_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "filter_draw_sample", REPO / "benchmarks" / "filter_draw_sample.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _guide_codes() -> list[str]:
    """Rule codes in the order of the guide's table (the rows between its header and the next blank line)."""
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    start = lines.index("| code | fires when |")
    codes: list[str] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        codes.append(line.split("|")[1].strip())
    return codes


def test_guide_codes__table_parsed() -> None:
    codes = _guide_codes()
    assert len(codes) == len(set(codes)) == 16
    assert all(re.fullmatch(r"[a-z_]+", code) for code in codes)


def test_heldout_set__200_rows_with_ids_in_order() -> None:
    rows = _rows(HELDOUT)
    assert len(rows) == 200
    assert [row["id"] for row in rows] == list(range(200))
    for row in rows:
        assert set(row) == FIELDS, f"row {row.get('id')}: fields {sorted(row)}"
        assert isinstance(row["accepted"], bool), f"row {row['id']}: accepted={row['accepted']!r}"
        assert isinstance(row["text"], str) and row["text"].strip(), f"row {row['id']}: empty text"
        assert re.fullmatch(r"train\.json#\d+", row["source"]), f"row {row['id']}: source={row['source']!r}"


def test_heldout_set__rules_are_guide_codes_in_table_order() -> None:
    codes = _guide_codes()
    for row in _rows(HELDOUT):
        rules = row["rules"]
        unknown = set(rules) - set(codes)
        assert not unknown, f"row {row['id']}: unknown codes {sorted(unknown)}"
        assert rules == sorted(set(rules), key=codes.index), (
            f"row {row['id']}: rules {rules} not in table order"
        )


def test_heldout_set__one_sentence_per_passage_none_from_dev_set() -> None:
    sources = [row["source"] for row in _rows(HELDOUT)]
    assert len(set(sources)) == len(sources)
    shared = set(sources) & {row["source"] for row in _rows(DEV)}
    assert not shared, f"held-out shares passages with the dev set: {sorted(shared)}"


def test_heldout_set__guide_states_accepted_count() -> None:
    accepted = sum(row["accepted"] for row in _rows(HELDOUT))
    assert f"**{accepted} of the 200 sentences are accepted**" in GUIDE.read_text(encoding="utf-8")


def test_read_sources__collects_and_names_bad_row(tmp_path: Path) -> None:
    script = _load_draw_script()
    good = tmp_path / "a.jsonl"
    good.write_text(
        '{"source": "train.json#1"}\n\n{"source": "train.json#7", "text": "x"}\n', encoding="utf-8"
    )
    assert script.read_sources([good]) == frozenset({"train.json#1", "train.json#7"})
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"source": "train.json#1"}\n{"text": "no source"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"b\.jsonl:2: field 'source'"):
        script.read_sources([good, bad])


def test_draw__redraw_gives_heldout_and_dev_texts(shared_data: Callable[[str], Path]) -> None:
    script = _load_draw_script()
    root = shared_data("sciq")
    heldout = script.draw(root, 200, 4242, script.read_sources([DEV]))
    assert heldout == [{"source": row["source"], "text": row["text"]} for row in _rows(HELDOUT)]
    # Without --exclude the default draw must still re-create the dev set.
    dev = script.draw(root, 330, 2017)
    assert dev == [{"source": row["source"], "text": row["text"]} for row in _rows(DEV)]
