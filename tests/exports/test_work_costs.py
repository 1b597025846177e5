"""Pay per hour of active time per HIT kind and worker pay per released pair, in a real release's card
(exports/work_costs.py): real SciQ questions, written and validated by workers whose pay is in the ledger.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotation.importers.mcq import read_sciq
from annotation.models import Assignment, Batch
from crowd.models import Payment
from crowd.simulation import CAREFUL, make_crowd, sciq_items, simulate
from exports.work_costs import Work, cost_by_question_type, pay_by_kind
from tests.crowd.stage2_collection import build_collection

LABELS = dict(Batch.Kind.choices)


def test_pay_by_kind__pay_over_active_hours_per_kind() -> None:
    rows = [
        Work("sciq_question", "USD", 100, 600.0, True),
        Work("sciq_question", "USD", 100, 1200.0, False),
        Work("sciq_distractor", "USD", 30, 90.0, True),
        Work("sciq_distractor", "USD", 0, None, False),  # no time on file: counted, not in the rate
    ]
    by_kind = {r["kind"]: r for r in pay_by_kind(rows, LABELS)}
    writing = by_kind["SciQ question writing"]
    assert (writing["submissions"], writing["hours"], writing["paid_cents"]) == (2, 0.5, 200)
    assert writing["hourly_cents"] == 400.0 and writing["active_share"] == 0.5
    validating = by_kind["SciQ validation and distractors"]
    assert validating["hourly_cents"] == 1200.0 and validating["submissions"] == 2
    assert pay_by_kind([Work("screening", "USD", 50, None, False)], LABELS)[0]["hourly_cents"] is None


def test_cost_by_question_type__shares_the_writing_pay_and_adds_validations() -> None:
    pairs = [(1, "yes_no", 10), (2, "yes_no", 10), (3, "sciq", 11), (4, "sciq", None)]
    paid = {10: (140, "USD"), 11: (50, "USD"), 20: (20, "USD"), 21: (25, "USD")}
    written = {10: 14, 11: 1}
    rows = cost_by_question_type(pairs, paid, written, [(3, 20), (3, 21)])
    assert rows == [
        {"question_type": "sciq", "currency": "USD", "pairs": 1, "cost_cents_per_pair": 95.0},
        {"question_type": "yes_no", "currency": "USD", "pairs": 2, "cost_cents_per_pair": 10.0},
    ]  # pair 4 has no work on file: left out


@pytest.mark.django_db
def test_release_card__pay_per_hour_per_hit_kind_and_cost_per_pair(shared_data: Any, tmp_path: Path) -> None:
    questions = [(r.id, r.question, r.answer) for r in read_sciq(shared_data("sciq"), ("val",))[:40]]
    items = sciq_items(questions, bad_share=0.0, seed=1)
    crowd = make_crowd({CAREFUL: 4}, seed=1)
    collection = build_collection(items, simulate(items, crowd, k=2, seed=1))
    collection.stage1.reward_cents = 60
    collection.stage1.save(update_fields=["reward_cents"])
    # Writers: 60 cents each from the batch's reward (approved, no ledger row), 30 min accept-to-submit.
    Assignment.objects.filter(hit__batch=collection.stage1).update(time_on_task_seconds=1800.0)
    # Validators: 20 cents in the ledger plus a 5-cent bonus, 2 minutes active of 10 on the clock.
    validations = Assignment.objects.filter(hit__batch=collection.stage2)
    for assignment in validations:
        assignment.status = Assignment.Status.APPROVED
        assignment.active_seconds, assignment.time_on_task_seconds = 120.0, 600.0
        assignment.save(update_fields=["status", "active_seconds", "time_on_task_seconds"])
        for kind, cents in ((Payment.Kind.REWARD, 20), (Payment.Kind.BONUS, 5)):
            Payment.objects.create(
                batch=collection.stage2,
                assignment=assignment,
                worker=assignment.worker,
                kind=kind,
                amount_cents=cents,
                idempotency_key=f"{kind}-{assignment.pk}",
                status=Payment.Status.CONFIRMED,
            )
    # A failed bonus is no pay.
    first = validations.first()
    Payment.objects.create(
        batch=collection.stage2,
        assignment=first,
        worker=first.worker,
        kind=Payment.Kind.BONUS,
        amount_cents=999,
        idempotency_key="failed-bonus",
        status=Payment.Status.FAILED,
    )
    out = StringIO()
    call_command(
        "export_release",
        *("--name", "paid", "--version", "1", "--out", str(tmp_path), "--batch", str(collection.stage1.pk)),
        *("--formats", "jsonl", "--allow-short-split"),
        stdout=out,
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    card = (Path(summary["path"]) / "card.md").read_text(encoding="utf-8")
    n = sum(summary["counts"].values())  # the questions the aggregated verdict let in
    assert 35 <= n <= 40
    assert f"| SciQ question writing | {n} | {n / 2:.2f} | 0% | {0.6 * n:.2f} USD | 1.20 USD |" in card
    # 2n validations: 25 cents for 2 active minutes each = 7.50 per hour (not 1.50 by the clock).
    assert (
        f"| SciQ validation and distractors | {2 * n} | {n / 15:.2f} | 100% | {0.5 * n:.2f} USD | 7.50 USD |"
        in card
    )
    # Each released question: its writer's 60 cents plus two validations of 25.
    assert f"| sciq | {n} | 1.10 USD |" in card
