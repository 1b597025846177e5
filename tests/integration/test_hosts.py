"""The platform as separate hosts on one machine: a web host (gunicorn) and worker hosts (``celery
worker``), each process with its own ``CROWDQA_VAR_DIR`` (so its own releases, benchmarks, models and
cache folders), sharing only the test database, a Redis server and moto's S3 server on loopback
(``CROWDQA_STORAGE_URL``).

* A release started from the web host's New release page is built by a default-queue worker host, then
  listed and downloaded intact (every file as the worker wrote it) from the web host.
* A benchmark started from the web host runs on a gpu-queue worker host, which reads the release from the
  storage; its per-item results open from the web host.
* A ranker trained on one worker host serves suggestions on another host that never trained one.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.contrib.auth import get_user_model

from annotation.models import Job
from config.celery import app as celery_app
from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.exports.test_export_pages import _corpus
from tests.integration.conftest import (  # noqa: F401 (fixtures)
    REPO,
    _free_port,
    celery_worker_process,  # noqa: F401 (a fixture)
    database_url,
    redis_url,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

BUCKET = "lab-hosts"
STORAGE_URL = f"s3://{BUCKET}/crowdqa"
PASSWORD = "a-long-password-for-the-hosts-test"


def _wait(what: str, ready: Callable[[], Any], seconds: float, logs: Path) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.5)
    tails = {p.name: p.read_text(errors="replace")[-3000:] for p in logs.glob("*.log")}
    raise AssertionError(f"{what} did not happen within {seconds} s; logs: {tails}")


def _host_env(var_dir: Path, redis: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_TASK_ALWAYS_EAGER",)}
    env.update(DATABASE_URL=database_url(), CROWDQA_VAR_DIR=str(var_dir), REDIS_URL=redis)
    return env


@pytest.fixture
def lab(s3_server, redis_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:  # noqa: F811
    """The shared services; every host started from now on inherits CROWDQA_STORAGE_URL and AWS_*."""
    s3_server.client().create_bucket(Bucket=BUCKET)
    monkeypatch.setenv("CROWDQA_STORAGE_URL", STORAGE_URL)
    return {"s3": s3_server, "redis": redis_url, "logs": tmp_path}


@pytest.fixture
def web_host(lab: dict[str, Any], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """gunicorn as deployed, on a host of its own: (base URL, its var dir)."""
    var_dir = tmp_path / "web-var"
    port = _free_port()
    log = (tmp_path / "web.log").open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "config.wsgi"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=REPO,
        env=_host_env(var_dir, lab["redis"]),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return requests.get(f"{url}/health/", timeout=5).ok
        except requests.RequestException:
            return False

    try:
        _wait("the web host's start", up, 60, tmp_path)
        yield url, var_dir
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()


def _signed_in(url: str) -> requests.Session:
    get_user_model().objects.create_superuser("lab", "lab@example.org", PASSWORD)
    session = requests.Session()
    session.get(f"{url}/accounts/login/", timeout=30)
    response = session.post(
        f"{url}/accounts/login/",
        data={"username": "lab", "password": PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=30,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text[:500]
    return session


def _post(
    session: requests.Session, url: str, data: dict[str, Any], form_page: str = ""
) -> requests.Response:
    """Open the page with the form (``url`` itself unless named), then post the form to ``url``."""
    page = session.get(form_page or url, timeout=60)
    assert page.status_code == 200, page.text[:500]
    response = session.post(
        url,
        data={**data, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        timeout=120,
        allow_redirects=False,
    )
    assert response.status_code == 302, response.text[:2000]
    return response


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_release_and_benchmark__built_and_run_on_worker_hosts_served_by_the_web_host(
    lab: dict[str, Any],
    web_host: tuple[str, Path],
    celery_worker_process,  # noqa: F811
    tmp_path: Path,
) -> None:
    url, web_var = web_host
    worker_var, gpu_var = tmp_path / "worker-var", tmp_path / "gpu-var"
    celery_worker_process("default", "default-host", lab["redis"], var_dir=worker_var)
    celery_worker_process("gpu", "gpu-host", lab["redis"], var_dir=gpu_var)
    _corpus(documents=4)
    session = _signed_in(url)

    # The New release page on the web host queues the export; the default-queue host builds it.
    form = {"name": "syl", "version": "1.0", "source": "corpus", "corpus": "syl", "seed": "0"}
    form |= {"ratio_train": "0.5", "ratio_val": "0.25", "ratio_test": "0.25", "formats": ["csv", "jsonl"]}
    job_pk = int(
        re.search(r"/jobs/(\d+)/", _post(session, f"{url}/releases/new/", form).headers["Location"])[1]
    )
    job = _wait(
        "the export",
        lambda: Job.objects.filter(pk=job_pk, status__in=["done", "failed"]).first(),
        180,
        tmp_path,
    )
    assert job.status == "done", job.error
    release = Release.objects.get()
    built = worker_var / "releases" / "syl-1.0"
    assert release.path == f"{STORAGE_URL}/releases/syl-1.0" and (built / "manifest.json").is_file()
    assert not (web_var / "releases").exists()

    # Listed and downloaded intact from the web host, which never saw the worker's disk.
    listing = session.get(f"{url}/releases/", timeout=60)
    assert listing.status_code == 200 and f"/releases/{release.pk}/" in listing.text
    detail = session.get(f"{url}/releases/{release.pk}/", timeout=120)
    assert detail.status_code == 200 and "syl" in detail.text
    archive = session.get(f"{url}/releases/{release.pk}/download.zip", timeout=120)
    assert archive.status_code == 200
    with zipfile.ZipFile(io.BytesIO(archive.content)) as packed:
        downloaded = {name.removeprefix("syl-1.0/"): packed.read(name) for name in packed.namelist()}
    assert downloaded == _files(built)
    single = session.get(f"{url}/releases/{release.pk}/files/manifest.json", timeout=60)
    assert single.content == (built / "manifest.json").read_bytes()
    assert list((web_var / "cache" / "releases").glob("syl-1.0-*/manifest.json"))

    # A benchmark started on the web host runs on the gpu host, which fetches the release itself.
    data = {"system": "search", "split": "test", "metrics": ["rougeL"], "model": "local", "judge": "none"}
    board = f"{url}/benchmarks/release/{release.pk}/"
    _post(session, f"{board}start/", data, form_page=board)
    run = _wait(
        "the benchmark",
        lambda: BenchmarkRun.objects.filter(status__in=["done", "failed"]).first(),
        180,
        tmp_path,
    )
    assert run.status == "done", run.error
    assert run.results_path == f"{STORAGE_URL}/benchmarks/{run.pk}.json"
    assert list((gpu_var / "cache" / "releases").glob("syl-1.0-*/manifest.json"))
    written = gpu_var / "benchmarks" / f"{run.pk}.json"
    results = session.get(f"{url}/benchmarks/run/{run.pk}/results.json", timeout=60)
    assert results.status_code == 200 and results.content == written.read_bytes()
    assert json.loads(results.content)["metrics"] == run.metrics and not (web_var / "benchmarks").exists()


def _suggest(var_dir: Path, redis: str) -> dict[str, Any]:
    """``suggest_distractors`` on a host of its own (a fresh process, its own var dir)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "suggest_distractors", "--question", "Which organ pumps blood?"]
        + ["--answer", "heart", "--top", "3"],
        cwd=REPO,
        env=_host_env(var_dir, redis),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_ranker__trained_on_one_worker_host_serves_on_another(
    lab: dict[str, Any],
    celery_worker_process,  # noqa: F811
    shared_data,
    tmp_path: Path,
) -> None:
    other_var = tmp_path / "other-var"
    assert _suggest(other_var, lab["redis"])["suggester"] == "WordNetSiblingFallback"  # nothing trained yet

    trainer_var = tmp_path / "trainer-var"
    celery_worker_process("default", "trainer-host", lab["redis"], var_dir=trainer_var)
    params = {"arc_dir": str(shared_data("arc")), "sciq_dir": str(shared_data("sciq")), "n_trees": 20}
    params |= {"max_questions": 300, "wordfreq_top_n": 20_000, "include_wordnet_glosses": False}
    params |= {"tag_all_candidates": False, "n_jobs": 1}
    job = Job.objects.create(kind="train_distractor_ranker", params=params)
    from distractors.tasks import train_ranker

    with celery_app.connection_for_write(lab["redis"]) as connection:
        train_ranker.apply_async(args=[job.pk], connection=connection)
    job = _wait(
        "the training",
        lambda: Job.objects.filter(pk=job.pk, status__in=["done", "failed"]).first(),
        600,
        tmp_path,
    )
    assert job.status == "done", job.error
    version = job.result["published_version"]
    assert (trainer_var / "models" / "distractors" / "ranker.json").is_file()

    served = _suggest(other_var, lab["redis"])
    assert served["suggester"] == "DistractorRanker" and len(served["suggestions"]) == 3
    copy = other_var / "cache" / "models" / "distractors" / version
    assert _files(copy) == _files(trainer_var / "models" / "distractors")
    assert not (other_var / "models" / "distractors" / "ranker.json").exists()
