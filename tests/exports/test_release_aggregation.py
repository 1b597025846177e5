"""The aggregated stage-2 verdict decides which SciQ questions a release holds: real SciQ questions,
validated by simulated workers of known reliability (careful, careless, spammers, adversarial)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.importers.mcq import read_sciq
from crowd.aggregation import ACCEPT, REJECT
from crowd.simulation import ADVERSARIAL, CAREFUL, CARELESS, SPAMMER, make_crowd, sciq_items, simulate
from tests.crowd.stage2_collection import build_collection

pytestmark = pytest.mark.django_db


def _export(tmp_path: Path, batch: int, version: str, *extra: str) -> dict[str, Any]:
    out = StringIO()
    call_command(
        "export_release",
        "--name",
        "sim",
        "--version",
        version,
        "--out",
        str(tmp_path),
        "--batch",
        str(batch),
        "--formats",
        "jsonl",
        *extra,
        stdout=out,
    )
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _released_questions(summary: dict[str, Any]) -> set[str]:
    root = Path(summary["path"]) / "multiple_choice"
    return {
        json.loads(line)["question"]
        for split in ("train", "val", "test")
        for line in (root / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    }


def test_export_release__aggregated_verdict_decides_and_the_release_says_how(shared_data, tmp_path) -> None:
    questions = [(r.id, r.question, r.answer) for r in read_sciq(shared_data("sciq"), ("val",))[:150]]
    assert len(questions) == 150
    items = sciq_items(questions, bad_share=0.3, seed=2)
    crowd = make_crowd({CAREFUL: 5, CARELESS: 3, SPAMMER: 3, ADVERSARIAL: 1}, seed=2)
    judgements = simulate(items, crowd, k=3, seed=2, workload={SPAMMER: 2.0})
    collection = build_collection(items, judgements)
    truth = {item.question + "\n" + item.answer: item.truth for item in items}
    answer_of = {p.question: p.answer for p in collection.pairs.values()}

    def wrong(summary: dict[str, Any]) -> int:
        return sum(truth[q + "\n" + answer_of[q]] == REJECT for q in _released_questions(summary))

    allow = ("--allow-short-split",)
    everything = _export(tmp_path, collection.stage1.pk, "all", "--aggregation", "none", *allow)
    assert sum(everything["counts"].values()) == len(items)
    ds = _export(tmp_path, collection.stage1.pk, "ds", *allow)
    majority = _export(tmp_path, collection.stage1.pk, "mv", "--aggregation", "majority", *allow)
    bad = sum(item.truth == REJECT for item in items)
    good = len(items) - bad
    # Aggregation leaves out most false answers and keeps most good questions; Dawid-Skene, which
    # discounts the spammers' "fine", lets fewer false answers through than majority vote.
    assert wrong(ds) <= wrong(majority) and wrong(ds) < bad / 3
    kept_good = sum(truth[q + "\n" + answer_of[q]] == ACCEPT for q in _released_questions(ds))
    assert kept_good >= 0.85 * good

    manifest = json.loads((Path(ds["path"]) / "manifest.json").read_text(encoding="utf-8"))
    info = manifest["aggregation"]
    assert info["method"] == "dawid_skene" and info["validated"] == len(items)
    assert info["left_out"] == len(items) - sum(ds["counts"].values())
    assert info["labels"] == len(judgements)
    alpha = info["alpha_per_batch"][str(collection.stage2.pk)]
    assert alpha is not None and -1 <= alpha <= 1
    card = (Path(ds["path"]) / "card.md").read_text(encoding="utf-8")
    assert "## Validation" in card and "`dawid_skene`" in card
    assert f"| {collection.stage2.pk} | {alpha:.3f} |" in card
    assert "aggregation" not in json.loads((Path(everything["path"]) / "manifest.json").read_text())

    with pytest.raises(CommandError, match="invalid choice: 'glad'"):
        _export(tmp_path, collection.stage1.pk, "x", "--aggregation", "glad")
