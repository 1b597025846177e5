"""run_benchmark through a real broker to a real ``celery worker -Q gpu`` process (search: fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.celery import app as celery_app
from evaluation.models import BenchmarkRun
from evaluation.tasks import gpu_run_benchmark
from tests.evaluation.conftest import run_search
from tests.integration.conftest import celery_worker_process, redis_url  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_gpu_run_benchmark__runs_on_the_gpu_worker(
    small_release: Path,
    redis_url: str,  # noqa: F811
    celery_worker_process,  # noqa: F811
    tmp_path: Path,
) -> None:
    reference = run_search(small_release, 5)
    run = BenchmarkRun.objects.create(
        release=reference.release,
        split="test",
        system="search",
        params={**reference.params, "note": "queued copy"},
        metrics_requested=["rouge_l"],
    )
    worker_var = tmp_path / "worker-var"
    celery_worker_process("gpu", "gpu-bench", redis_url, var_dir=worker_var)
    with celery_app.connection_for_write(redis_url) as conn:
        result = gpu_run_benchmark.apply_async(args=[run.pk], connection=conn)
    outcome = result.get(timeout=120)
    run.refresh_from_db()
    # The worker listens on the gpu queue only and has its own var dir: the file proves where it ran.
    assert outcome["status"] == run.status == "done"
    assert run.metrics == reference.metrics and run.n_items == 5
    assert Path(run.results_path) == worker_var / "benchmarks" / f"{run.pk}.json"
    assert json.loads(Path(run.results_path).read_text(encoding="utf-8"))["metrics"] == run.metrics
