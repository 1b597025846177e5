"""The "human" leaderboard row: two submitted expert answers on a real release -> BenchmarkRun(system=human).

The stored figures must be exactly those of the pure :func:`evaluation.agreement.agreement` on the same
expert/crowd pairs; a returned (not submitted) assignment is ignored.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation import question_types as qt
from annotation.models import Assignment, ExpertAnswer
from crowd.models import Worker
from evaluation.agreement import AgreementItem, agreement
from evaluation.models import BenchmarkRun
from evaluation.services.expert import create_expert_batch
from evaluation.services.human import HumanAgreementError, compute_human_agreement
from exports.dataset import item_id
from exports.services.releases import register_release
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def _answer(batch: Any, worker: Worker, question_type: str, answer: str) -> Assignment:
    """The expert claims the next HIT and submits (the view's store, without the page)."""
    assignment = claim_next(batch, worker)
    assignment.submit({"question_type": question_type, "answer": answer})
    ExpertAnswer.objects.create(
        assignment=assignment, qa_pair=assignment.hit.qa_pair, question_type=question_type, answer=answer
    )
    return assignment


def test_compute_human_agreement__run_equals_pure_figures(small_release: Path) -> None:
    release = register_release(small_release)
    batch = create_expert_batch(release, 3, seed=1)
    expert = Worker.objects.get_or_create_for("local", "expert-1")
    first = _answer(batch, expert, qt.SINGLE_FACTUAL, "The final exam is worth 30 percent of the grade")
    second = _answer(batch, expert, qt.NO_ANSWER, qt.NO_ANSWER_TEXT)
    second.approve()
    third = claim_next(batch, expert)
    third.return_()  # returned work never counts

    with pytest.raises(HumanAgreementError, match="unknown metric 'rouge'"):
        compute_human_agreement(release, batch, metrics=["rouge"])
    assert not BenchmarkRun.objects.exists()

    run = compute_human_agreement(release, batch, metrics=["rouge_l"])
    expected = agreement(
        [
            AgreementItem(
                item_id(a.hit.qa_pair),
                a.hit.qa_pair.question,
                a.hit.qa_pair.answer,
                a.hit.qa_pair.question_type,
                a.answers["answer"],
                a.answers["question_type"],
            )
            for a in (first, second)
        ],
        ["rouge_l"],
    )
    run.refresh_from_db()
    assert run.system == "human" and run.split == "test" and run.status == BenchmarkRun.Status.DONE
    assert run.release_id == release.pk and run.n_items == 2
    assert run.model_name == f"expert:{expert.pseudonym}"
    assert run.metrics == expected.metrics
    assert run.stratified == json.loads(json.dumps(expected.stratified))
    results = json.loads(Path(run.results_path).read_text())
    assert results["items"] == json.loads(json.dumps(expected.items))
    assert set(results["items"]) == {item_id(first.hit.qa_pair), item_id(second.hit.qa_pair)}


def test_expert_agreement__command_json_and_errors(small_release: Path) -> None:
    release = register_release(small_release)
    with pytest.raises(CommandError, match="no expert_answer batch"):
        call_command("expert_agreement", "--release", str(small_release), stdout=StringIO())
    batch = create_expert_batch(release, 2, seed=0)
    with pytest.raises(CommandError, match="no submitted or approved expert answer"):
        call_command("expert_agreement", "--release", str(small_release), stdout=StringIO())
    expert = Worker.objects.get_or_create_for("local", "expert-2")
    _answer(batch, expert, qt.YES_NO, "Yes")
    out = StringIO()
    call_command(
        "expert_agreement",
        "--release",
        str(small_release),
        "--metrics",
        "rouge_l",
        "--judge",
        "none",
        stdout=out,
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["system"] == "human" and summary["n_items"] == 1
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert summary["metrics"] == run.metrics and "question_type_accuracy" in run.metrics
