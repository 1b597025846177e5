"""``manage.py aggregate_judgements`` on a file and on a batch's stored SciQ stage-2 validations
(real SciQ questions, simulated validators of known reliability)."""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.importers.mcq import read_sciq
from annotation.models import Assignment
from crowd.aggregation import DAWID_SKENE, MAJORITY, REJECT
from crowd.simulation import ADVERSARIAL, CAREFUL, SPAMMER, accuracy, make_crowd, sciq_items, simulate
from tests.crowd.stage2_collection import build_collection


def _run(*args: str) -> tuple[dict[str, Any], str]:
    out = StringIO()
    call_command("aggregate_judgements", *args, stdout=out)
    text = out.getvalue().strip()
    return json.loads(text.splitlines()[-1]), text


def _simulated(shared_data: Callable[[str], Path], n: int, seed: int = 0):  # noqa: ANN202
    questions = [(r.id, r.question, r.answer) for r in read_sciq(shared_data("sciq"), ("test",))[:n]]
    items = sciq_items(questions, bad_share=0.3, seed=seed)
    crowd = make_crowd({CAREFUL: 6, SPAMMER: 2, ADVERSARIAL: 1}, seed=seed)
    return items, crowd, simulate(items, crowd, k=3, seed=seed, workload={SPAMMER: 2.0})


def test_aggregate_judgements__input_file_json_contract(shared_data, tmp_path: Path) -> None:
    items, crowd, judgements = _simulated(shared_data, 300)
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps({"item": j.item, "worker": j.worker, "label": j.label}) + "\n" for j in judgements)
    )
    result, text = _run("--input", str(path), "--method", MAJORITY, "--json")
    assert len(text.splitlines()) == 1  # --json: the object only
    assert result["method"] == MAJORITY
    assert set(result["items"]) == {i.id for i in items}
    assert all(
        set(v) >= {"label", "confidence"} and 0.5 <= v["confidence"] <= 1 for v in result["items"].values()
    )
    assert set(result["workers"]) == {w.name for w in crowd}
    assert sum(w["n"] for w in result["workers"].values()) == len(judgements)
    default, text = _run("--input", str(path))
    assert default["method"] == DAWID_SKENE and "Krippendorff's alpha" in text.splitlines()[0]
    verdicts = {item: v["label"] for item, v in default["items"].items()}
    assert accuracy(verdicts, items) >= accuracy({i: v["label"] for i, v in result["items"].items()}, items)


def test_aggregate_judgements__bad_input_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"item": "q1", "worker": "w1", "label": "accept"}\n{"item": "q2", "worker": "w1"}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl line 2: field 'label' must be a non-empty string"):
        _run("--input", str(path))
    with pytest.raises(CommandError, match="no such file"):
        _run("--input", str(tmp_path / "missing.jsonl"))
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CommandError, match="not UTF-8"):
        _run("--input", str(path))
    with pytest.raises(CommandError):
        _run("--input", str(path), "--batch", "1")  # one source only


@pytest.mark.django_db
def test_aggregate_judgements__batch_validations_by_pseudonym(shared_data) -> None:
    items, crowd, judgements = _simulated(shared_data, 120, seed=1)
    collection = build_collection(items, judgements)
    # A rejected validation does not count.
    dropped = Assignment.objects.filter(hit__batch=collection.stage2).order_by("pk").first()
    dropped.status = Assignment.Status.REJECTED
    dropped.save(update_fields=["status"])
    for batch in (collection.stage2, collection.stage1):
        result, _ = _run("--batch", str(batch.pk), "--json")
        assert set(result["items"]) == {str(p.pk) for p in collection.pairs.values()}
        assert sum(w["n"] for w in result["workers"].values()) == len(judgements) - 1
        pseudonyms = {w.pseudonym: name for name, w in collection.workers.items()}
        assert set(result["workers"]) == set(pseudonyms)  # never a platform id
        skill = {pseudonyms[p]: w["skill"] for p, w in result["workers"].items()}
        kinds = {w.name: w.kind for w in crowd}
        careful = [s for name, s in skill.items() if kinds[name] == CAREFUL]
        assert min(careful) > max(s for name, s in skill.items() if kinds[name] != CAREFUL)
        by_pair = {str(p.pk): item for item, p in collection.pairs.items()}
        verdicts = {by_pair[i]: v["label"] for i, v in result["items"].items()}
        assert accuracy(verdicts, items) > 0.85
        assert any(v == REJECT for v in verdicts.values())
    with pytest.raises(CommandError, match=r"no Batch\(999999\)"):
        _run("--batch", "999999")


def test_aggregate_judgements__gold_items_give_each_worker_a_gold_accuracy(
    shared_data, tmp_path: Path
) -> None:
    items, crowd, judgements = _simulated(shared_data, 300, seed=2)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(json.dumps({"item": j.item, "worker": j.worker, "label": j.label}) + "\n" for j in judgements)
    )
    gold_items = items[::10]  # one in ten has a known verdict, known-bad (false answer) ones included
    assert any(i.truth == REJECT for i in gold_items)
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps({"item": i.id, "label": i.truth}) + "\n" for i in gold_items))
    result, _ = _run("--input", str(labels), "--gold", str(gold), "--json")
    kinds = {w.name: w.kind for w in crowd}
    by_kind: dict[str, list[float]] = {}
    for name, row in result["workers"].items():
        if row.get("gold_n", 0) >= 5:
            by_kind.setdefault(kinds[name], []).append(row["gold_accuracy"])
    assert min(by_kind[CAREFUL]) > 0.75 and max(by_kind[ADVERSARIAL]) < 0.4
    for item in gold_items:  # Dawid-Skene keeps the known verdicts
        assert result["items"][item.id]["label"] == item.truth
    gold.write_text('{"item": "x", "label": "accept"}\n{"item": "x", "label": "reject"}\n')
    with pytest.raises(CommandError, match="gold.jsonl line 2: item 'x' is given twice"):
        _run("--input", str(labels), "--gold", str(gold))
