"""export_release of crowd-built SciQ questions: the suggestion log files.

Stage 1 and stage 2 run through the HIT handlers and services on real SciQ passages; the release must
list each question's six offered suggestions (score, rank, model version), whether the validator
picked them, and the worker-written distractors marked as such, outside the multiple-choice schema.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from annotation.hits.sciq_distractor import SciQDistractorHandler, suggestions_of
from annotation.hits.sciq_question import SciQQuestionHandler
from annotation.models import Batch, Corpus, Passage, QAPair, sha256_text
from annotation.services.batches import BatchSpec, create_batch
from crowd.services.validation_hits import on_question_accepted
from exports.models import Release
from exports.splits import SPLITS
from tests.annotation.test_sciq_hits import usable_records
from tests.factories import make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

CORPUS = "sciq-crowd"


def _stage1(root: Path) -> list[QAPair]:
    """Two workers each write the real SciQ question of a passage of their stage-1 HIT."""
    records = {r.passage: r for r in usable_records(root, 6)}
    corpus = Corpus.objects.create(name=CORPUS, kind=Corpus.Kind.TEXTBOOK)
    for i, text in enumerate(records):
        Passage.objects.create(
            corpus=corpus,
            position=i,
            text=text,
            text_sha256=sha256_text(text),
            filter_status=Passage.FilterStatus.ACCEPTED,
        )
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=2))
    batch.publish()
    handler = SciQQuestionHandler()
    pairs = []
    for name in ("writer-a", "writer-b"):
        assignment = claim_next(batch, make_worker(name))
        passage = assignment.hit.passages.order_by("pk").first()
        record = records[passage.text]
        check = handler.check(
            assignment.hit,
            assignment,
            {"passage": str(passage.pk), "question": record.question, "answer": record.answer},
        )
        assert check.ok, check.errors
        handler.store(assignment, check)
        pairs.append(QAPair.objects.get(assignment=assignment))
    return pairs


def _stage2(pair: QAPair, picked_ranks: tuple[int, ...], own: str) -> list[str]:
    """A validator keeps the suggestions at ``picked_ranks`` and writes ``own``; returns their texts."""
    hit = on_question_accepted(pair)
    assert hit.batch.status == Batch.Status.PUBLISHED  # stage 2 of a published local batch opens itself
    assignment = claim_next(hit.batch, make_worker("validator"))
    assert assignment.hit_id == hit.pk
    offered = suggestions_of(pair)
    kept = [s for s in offered if s.model_rank in picked_ranks]
    handler = SciQDistractorHandler()
    fields = {"suggested": [str(s.pk) for s in kept], "own-0": own}
    check = handler.check(hit, assignment, fields)
    assert check.ok, check.errors
    handler.store(assignment, check)
    return [s.text for s in kept]


def test_export_release__sciq_suggestion_logs(shared_data: Callable[[str], Path], tmp_path: Path) -> None:
    validated, offered_only = _stage1(shared_data("sciq"))
    kept = _stage2(validated, picked_ranks=(1, 3), own="a quartz crystal")
    on_question_accepted(offered_only)  # suggestions stored, nobody validated yet

    out = StringIO()
    call_command(
        "export_release", "--name", "crowd-sciq", "--version", "0.1", "--out", str(tmp_path),
        "--corpus", CORPUS, "--formats", "csv,jsonl", "--ratios", "0.5,0.5,0", "--sync", stdout=out,
    )  # fmt: skip
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    release = Path(summary["path"])
    assert Release.objects.get(pk=summary["release_id"]).path == str(release.resolve())

    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    files = {f["path"]: f for f in manifest["files"]}
    lines = {}
    for split in SPLITS:
        entry = files[f"suggestions_{split}.jsonl"]
        rows = [json.loads(x) for x in (release / entry["path"]).read_text(encoding="utf-8").splitlines()]
        assert entry["rows"] == len(rows) and len(entry["sha256"]) == 64
        lines.update({row["id"]: row for row in rows})
    assert set(lines) == {f"crowdqa-{validated.pk}", f"crowdqa-{offered_only.pk}"}

    log = lines[f"crowdqa-{validated.pk}"]
    assert log["validations"] == 1
    offered = suggestions_of(validated)
    assert [(s["text"], s["rank"], s["score"], s["model_version"]) for s in log["suggestions"]] == [
        (d.text, d.model_rank, d.model_score, d.model_version) for d in offered
    ]
    assert [s["text"] for s in log["suggestions"] if s["picked"]] == kept
    assert [s["rank"] for s in log["suggestions"] if s["picked"]] == [1, 3]
    assert {(d["text"], d["origin"]) for d in log["distractors"]} == {
        *((t, "model") for t in kept),
        ("a quartz crystal", "worker"),
    }
    other = lines[f"crowdqa-{offered_only.pk}"]
    assert other["validations"] == 0 and len(other["suggestions"]) == len(suggestions_of(offered_only))
    assert not any(s["picked"] for s in other["suggestions"]) and other["distractors"] == []

    for split in SPLITS:
        with (release / "multiple_choice" / f"{split}.csv").open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle))
        assert not {"suggestions", "picked", "score", "rank"} & set(header)
    card = (release / "card.md").read_text(encoding="utf-8")
    assert "## Distractor suggestions" in card
    assert f"Validators kept 2 of {len(offered)} suggestions shown" in card
