"""A floor wage per batch: approving tops the reward up by the hour of active time, once, via the ledger."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Assignment, Batch
from crowd.models import Payment
from crowd.services.fair_pay import top_up_cents
from tests.crowd.conftest import answers_for
from tests.factories import make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def _run(*args: str) -> dict:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_top_up_cents__rounds_up_and_never_pays_below_zero() -> None:
    assert top_up_cents(50, 600, 1200) == 150  # 10 minutes at 12.00/h owe 2.00; 0.50 paid
    assert top_up_cents(50, 601, 1200) == 151
    assert top_up_cents(500, 600, 1200) == 0 and top_up_cents(50, None, 1200) == 0
    assert top_up_cents(50, 600, 0) == 0


def test_approve__tops_up_to_the_floor_wage_once_by_active_time(sciq_corpus) -> None:
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
    batch.options = {**batch.options, "floor_wage_cents_per_hour": 1200}
    batch.save(update_fields=["options"])
    slow = claim_next(batch, make_worker("w1"))
    slow.accepted_at = timezone.now() - timedelta(minutes=30)
    slow.record_active("page-1", 600_000)  # ten minutes of measured work in a tab open for thirty
    assert slow.active_seconds == 600
    slow.submit(answers_for(slow.hit))
    unmeasured = claim_next(batch, make_worker("w2"))
    unmeasured.submit(answers_for(unmeasured.hit))
    Assignment.objects.filter(pk=unmeasured.pk).update(time_on_task_seconds=7200)  # wall time is never paid
    for _ in range(2):
        _run("review_batch", "--batch", str(batch_id), "--approve", str(slow.pk), str(unmeasured.pk))
    top_ups = Payment.objects.filter(kind=Payment.Kind.BONUS)
    assert [(p.assignment_id, p.amount_cents, p.idempotency_key) for p in top_ups] == [
        (slow.pk, 150, f"floor-top-up-{slow.pk}")
    ]
    assert "minimum pay of 12.00" in top_ups.get().reason


def test_launch_batch__validators_and_floor_wage_are_set_at_launch(sciq_corpus) -> None:
    base = (
        "launch_batch",
        "--kind",
        "sciq_question",
        "--provider",
        "local",
        "--corpus",
        "sci",
        "--limit",
        "1",
    )
    batch = Batch.objects.get(pk=_run(*base, "--validators", "3", "--floor-wage", "12.50")["batch"])
    assert batch.options["stage2_assignments"] == 3 and batch.options["floor_wage_cents_per_hour"] == 1250
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="--validators: at least 1"):
        _run(*base, "--validators", "0")
    with pytest.raises(CommandError, match="--floor-wage must be an amount"):
        _run(*base, "--floor-wage", "lots")


def test_launch_batch__validators_need_a_stage_2(sciq_corpus) -> None:
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="has no stage 2"):
        _run("launch_batch", "--kind", "sciq_distractor", "--corpus", "sci", "--validators", "3")
