"""The demo is enough for a normal release and a benchmark (annotation/demo_syllabi.py, services/demo.py).

``load_demo`` stores ten generated syllabi with fourteen reference pairs each; a release of the demo
syllabi with the default ratios has train, val and test with no syllabus in two splits and nothing to
confirm, and the search baseline runs on ``test``. Loading again adds nothing.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotation import question_types as qt
from annotation.demo_syllabi import load_courses
from annotation.models import QAPair
from console.demo import DEMO_DIR, load_demo
from evaluation.models import BenchmarkRun

pytestmark = pytest.mark.django_db


def test_load_courses__two_pairs_per_type_spans_in_the_text() -> None:
    syllabi = load_courses(DEMO_DIR / "courses" / "courses.json")
    assert len(syllabi) >= 10 and len({s.name for s in syllabi}) == len(syllabi)
    for syllabus in syllabi:
        types = [p.question_type for p in syllabus.pairs]
        assert sorted(types) == sorted(qt.SYLLABUS_TYPES * 2), syllabus.name
        for pair in syllabus.pairs:
            assert all(span in syllabus.text for span in pair.spans)
            low, high = qt.SPAN_COUNTS[pair.question_type]
            assert low <= len(pair.spans) <= high, pair.id
    assert load_courses(DEMO_DIR / "courses" / "courses.json") == syllabi  # deterministic


def test_demo__release_has_three_splits_and_search_runs_on_test(tmp_path: Path, settings: Any) -> None:
    settings.VAR_DIR = tmp_path / "var"
    summary = load_demo()
    assert summary["syllabi"]["reference_pairs_added"] == 140
    assert load_demo()["syllabi"]["reference_pairs_added"] == 0
    out = StringIO()
    call_command(
        "export_release",
        *("--name", "demo-syllabi", "--version", "1", "--out", str(tmp_path / "releases")),
        *("--corpus", "demo-syllabi", "--formats", "csv,jsonl", "--sync"),
        stdout=out,
    )
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert all(result["counts"][split] > 0 for split in ("train", "val", "test")), result
    run_out = StringIO()
    call_command(
        "run_benchmark",
        *(
            "--release",
            result["path"],
            "--system",
            "search",
            "--split",
            "test",
            "--metrics",
            "rougeL",
            "--sync",
        ),
        stdout=run_out,
    )
    run = BenchmarkRun.objects.get()
    assert run.status == BenchmarkRun.Status.DONE and run.n_items == result["counts"]["test"]
    assert run.metrics["rouge_l_f1"] > 0
    assert QAPair.objects.filter(corpus__name="demo-syllabi", spans__isnull=False).exists()


def test_demo_batches__a_second_sciq_batch_finds_free_passages() -> None:
    from annotation.models import Batch, Passage
    from annotation.services.batches import BatchSpec, create_batch
    from console.demo import load_demo_batches

    load_demo()
    work = load_demo_batches()
    assert work["batches"]["sciq_question"]["hits"] == 4
    assert work["batches"]["syllabus_qa"]["hits"] == 3
    assert Passage.objects.filter(corpus__name="demo-textbook").accepted().count() >= 18
    second = create_batch(BatchSpec(kind="sciq_question", corpus="demo-textbook"))
    assert second.hits.count() >= 2 and second.name == "SciQ question writing: demo-textbook"
    assert Batch.objects.filter(kind="sciq_question").count() == 2
