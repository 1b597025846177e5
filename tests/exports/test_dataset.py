"""exports/dataset.py: agreement figures for the card come from the latest expert run of the dataset."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evaluation.models import BenchmarkRun
from evaluation.services.human import agreement_for
from exports.agreement_sources import card_agreement
from exports.models import Release

pytestmark = pytest.mark.django_db


def _release(name: str, version: str) -> Release:
    return Release.objects.create(
        name=name,
        version=version,
        path=f"/releases/{name}-{version}",
        manifest_sha256="0" * 64,
        created=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_agreement_for__latest_done_human_run_of_the_name_with_its_source() -> None:
    assert agreement_for("syllabusqa") == ({}, None)
    old = _release("syllabusqa", "1.0")
    BenchmarkRun.objects.create(release=old, system="rag", status="done", metrics={"rouge_l_f1": 0.2})
    BenchmarkRun.objects.create(release=old, system="human", status="failed", metrics={"rouge_l_f1": 0.9})
    BenchmarkRun.objects.create(
        release=_release("other", "1"), system="human", status="done", metrics={"x": 1}
    )
    assert agreement_for("syllabusqa") == ({}, None)
    run = BenchmarkRun.objects.create(
        release=old,
        system="human",
        status="done",
        split="test",
        n_items=50,
        metrics={"rouge_l_f1": 0.41, "fact_qa_p": 0.83, "bertscore_f1": None, "note": "x"},
    )
    figures, note = agreement_for("syllabusqa")
    assert figures == {"rouge_l_f1": 0.41, "fact_qa_p": 0.83}
    # The export reads them through the source the evaluation app registers when it is ready.
    assert card_agreement("syllabusqa") == (figures, note)
    assert card_agreement("other")[0] == {"x": 1.0}
    assert note == (
        "Agreement of expert answers with the crowd's on 50 test items of release syllabusqa 1.0 "
        f"(benchmark run {run.pk})."
    )
