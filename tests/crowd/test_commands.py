"""The public commands launch_batch, review_batch, sync_batches and invite_workers on the local crowd."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Batch
from crowd.models import Payment
from crowd.services.dashboard import batch_stats
from tests.crowd.conftest import answers_for
from tests.factories import make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def _run(*args: str) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_launch_batch__dry_run_keeps_nothing_then_launch(sciq_corpus) -> None:
    base = (
        "launch_batch",
        "--kind",
        "sciq_question",
        "--provider",
        "local",
        "--corpus",
        "sci",
        "--limit",
        "2",
        "--reward",
        "0.50",
    )
    estimate = _run(*base, "--dry-run")
    assert estimate["hits"] == 2 and estimate["estimate"]["total_cents"] == 100
    assert not Batch.objects.exists()
    with pytest.raises(CommandError, match="budget"):
        _run(*base, "--budget", "0.99")
    launched = _run(*base, "--budget", "5")
    assert launched["hits"] == 2 and launched["status"] == "published"


def test_review_batch__approve_all_passing_list_and_bonus(sciq_corpus) -> None:
    batch_id = _run(
        "launch_batch",
        "--kind",
        "sciq_question",
        "--provider",
        "local",
        "--corpus",
        "sci",
        "--limit",
        "2",
        "--reward",
        "0.50",
    )["batch"]
    batch = Batch.objects.get(pk=batch_id)
    good = claim_next(batch, make_worker("w1"))
    good.submit(answers_for(good.hit))
    flagged = claim_next(batch, make_worker("w2"))
    flagged.submit(answers_for(flagged.hit))
    from annotation.models import QAPair

    QAPair.objects.create(
        corpus=batch.corpus,
        assignment=flagged,
        question_type="sciq",
        question="q?",
        answer="a",
        qc_flags=["question_length"],
    )
    result = _run("review_batch", "--batch", str(batch_id), "--approve-all-passing", "--list")
    assert result["approved"] == [good.pk]
    rows = {r["assignment"]: r for r in result["submissions"]}
    assert (
        rows[flagged.pk]["error_flags"] == ["question_length"] and rows[flagged.pk]["status"] == "submitted"
    )
    for _ in range(2):
        paid = _run(
            "review_batch",
            "--batch",
            str(batch_id),
            "--bonus",
            str(good.pk),
            "--cents",
            "20",
            "--reason",
            "clear question",
        )
    assert paid["bonuses"][0]["status"] == "already_paid"
    assert Payment.objects.filter(kind="bonus").count() == 1
    stats = batch_stats(batch)
    assert stats["progress"]["assignments"]["approved"] == 1
    assert stats["cost"]["rewards_cents"] == 50 and stats["cost"]["bonuses_cents"] == 20
    assert stats["qc"]["pairs"] == 1 and stats["qc"]["rates"] == {
        "question_length": 1.0
    }  # only w2 has a pair
    assert {w["approved"] for w in stats["workers"]} == {0, 1}


def test_sync_batches__sync_runs_in_process(sciq_corpus) -> None:
    _run("launch_batch", "--kind", "sciq_question", "--provider", "local", "--corpus", "sci", "--limit", "1")
    result = _run("sync_batches", "--sync")
    assert result["queued"] is False and result["failed"] == []


def test_invite_workers__lists_urls(sciq_corpus) -> None:
    batch_id = _run(
        "launch_batch", "--kind", "sciq_question", "--provider", "local", "--corpus", "sci", "--limit", "1"
    )["batch"]
    result = _run("invite_workers", "--batch", str(batch_id), "--count", "2", "--expert")
    assert result["count"] == 2 and all("/work/invite/" in u for u in result["urls"])


def test_launch_batch__require_and_exclude_the_same_batch_refused_naming_both(sciq_corpus) -> None:
    with pytest.raises(CommandError) as caught:
        call_command(
            "launch_batch", kind="sciq_question", corpus="sci", require_qualification=5, exclude_batch=[5]
        )
    assert "--require-qualification 5" in str(caught.value) and "--exclude-batch 5" in str(caught.value)
    assert not Batch.objects.exists()
