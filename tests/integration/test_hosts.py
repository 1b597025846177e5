"""The platform as separate hosts on one machine: a web host (gunicorn) and worker hosts (``celery
worker``), each process with its own ``CROWDQA_VAR_DIR`` (so its own releases, benchmarks, models and
cache folders), sharing only the test database, a Redis server and moto's S3 server on loopback
(``CROWDQA_STORAGE_URL``).

* A release started from the web host's New release page is built by a default-queue worker host, then
  listed and downloaded intact (every file as the worker wrote it) from the web host.
* A benchmark started from the web host runs on a gpu-queue worker host, which reads the release from the
  storage; its per-item results open from the web host.
* A ranker trained on one worker host serves suggestions on another host that never trained one.
* A payment claim held by a worker host killed mid-payment is taken over at once by another host
  (PostgreSQL's session advisory lock), and the bonus is paid once at the platform's stand-in.

The shared services, the web host and the worker hosts start once for the module (the database is emptied
between tests; the hosts hold no state of a test but their files).
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection
from django_celery_results.models import TaskResult

from annotation.models import Assignment, Job
from annotation.services.batches import BatchSpec
from config.celery import app as celery_app
from crowd.models import Payment, PaymentClaim
from crowd.services.launching import launch
from crowd.services.ledger import _lock_id
from crowd.services.review import approve_assignment, bonus_key
from crowd.services.sync import sync_batch
from distractors.model_store import POINTER
from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.crowd import conftest as _crowd
from tests.crowd.conftest import answers_for
from tests.exports.test_export_pages import _corpus
from tests.fakes import fixtures as _fakes
from tests.integration.conftest import (  # noqa: F401 (fixtures)
    REPO,
    _free_port,
    database_url,
    redis_url,
    start_celery_worker,
    stop_processes,
)
from tests.s3_server import running_s3_server

aws_credentials = _fakes.aws_credentials
fake_mturk_server = _fakes.fake_mturk_server
sciq_corpus = _crowd.sciq_corpus

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


@pytest.fixture(scope="module")
def lab(
    django_db_setup: None,  # the hosts' DATABASE_URL names the test database
    redis_url: str,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    """The shared services, started once for the module: moto's S3 server with the bucket, and Redis.

    Every host started from now on inherits ``CROWDQA_STORAGE_URL`` and the AWS variables.
    """
    logs = tmp_path_factory.mktemp("hosts")
    with pytest.MonkeyPatch.context() as patch, running_s3_server(patch, logs) as s3:
        s3.client().create_bucket(Bucket=BUCKET)
        patch.setenv("CROWDQA_STORAGE_URL", STORAGE_URL)
        yield {"s3": s3, "redis": redis_url, "logs": logs}


@pytest.fixture(scope="module")
def web_host(lab: dict[str, Any]) -> Iterator[tuple[str, Path]]:
    """gunicorn as deployed, on a host of its own: (base URL, its var dir); shared by the module."""
    logs = lab["logs"]
    var_dir = logs / "web-var"
    port = _free_port()
    with (logs / "web.log").open("a") as log:
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
        _wait("the web host's start", up, 120, logs)
        yield url, var_dir
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def worker_hosts(lab: dict[str, Any]) -> Iterator[dict[str, Path]]:
    """A default-queue worker host and a gpu-queue worker host, shared by the module: their var dirs."""
    logs = lab["logs"]
    hosts = {"default": logs / "default-var", "gpu": logs / "gpu-var"}
    processes = [
        start_celery_worker(queue, f"{queue}-host", lab["redis"], var_dir, logs / f"{queue}-host.log")
        for queue, var_dir in hosts.items()
    ]
    try:
        yield hosts
    finally:
        stop_processes(processes)


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
    worker_hosts: dict[str, Path],
) -> None:
    url, web_var = web_host
    worker_var, gpu_var = worker_hosts["default"], worker_hosts["gpu"]
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
        lab["logs"],
    )
    assert job.status == "done", job.error
    # The web host published with no result store of its own (gunicorn.conf.py's CROWDQA_WEB_SERVER);
    # the worker host that ran the job stored its result.
    assert TaskResult.objects.get(task_id=job.celery_task_id).status == "SUCCESS"
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
        lab["logs"],
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
    worker_hosts: dict[str, Path],
    shared_data,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    # Nothing trained yet: the storage names no ranker, so a host serves its own (here empty) model folder,
    # that is the WordNet fallback (tests/exports/test_shared_storage.py::test_ranker__published_by_...).
    pointer = f"crowdqa/{POINTER}"
    listed = lab["s3"].client().list_objects_v2(Bucket=BUCKET, Prefix=pointer)
    assert listed["KeyCount"] == 0
    other_var = tmp_path / "other-var"

    trainer_var = worker_hosts["default"]  # the default-queue host trains
    # A small real model (ARC + SciQ, 120 questions, 10 trees, a 5,000-word candidate set): what is
    # shown is where it is trained and served, not how good it is.
    params = {"arc_dir": str(shared_data("arc")), "sciq_dir": str(shared_data("sciq")), "n_trees": 10}
    params |= {"max_questions": 120, "wordfreq_top_n": 5_000, "include_wordnet_nouns": False}
    params |= {"include_wordnet_glosses": False, "tag_all_candidates": False, "n_jobs": 1}
    job = Job.objects.create(kind="train_distractor_ranker", params=params)
    from distractors.tasks import train_ranker

    with celery_app.connection_for_write(lab["redis"]) as connection:
        train_ranker.apply_async(args=[job.pk], connection=connection)
    job = _wait(
        "the training",
        lambda: Job.objects.filter(pk=job.pk, status__in=["done", "failed"]).first(),
        600,
        lab["logs"],
    )
    assert job.status == "done", job.error
    version = job.result["published_version"]
    assert (trainer_var / "models" / "distractors" / "ranker.json").is_file()

    served = _suggest(other_var, lab["redis"])
    assert served["suggester"] == "DistractorRanker" and len(served["suggestions"]) == 3
    copy = other_var / "cache" / "models" / "distractors" / version
    assert _files(copy) == _files(trainer_var / "models" / "distractors")
    assert not (other_var / "models" / "distractors" / "ranker.json").exists()
    stored = json.loads(lab["s3"].client().get_object(Bucket=BUCKET, Key=pointer)["Body"].read())
    assert stored["version"] == version


def _held_sends(fake: Any) -> tuple[threading.Event, threading.Event]:
    """Hold MTurk's answer to the first SendBonus (applied, not yet answered) until ``release`` is set.

    Returns:
        (arrived, release): ``arrived`` is set once the first SendBonus took effect on the fake.
    """
    arrived, release = threading.Event(), threading.Event()
    dispatch = fake.dispatch

    def holding(operation: str, params: Any) -> dict[str, Any]:
        result = dispatch(operation, params)
        if operation == "SendBonus" and not arrived.is_set():
            arrived.set()
            release.wait(120)
        return result

    fake.dispatch = holding
    return arrived, release


def _lock_holders(key: str) -> set[int]:
    """Backend pids of the sessions holding the advisory lock of payment ``key``."""
    lock = _lock_id(key)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            "AND classid = %s::bigint::oid AND objid = %s::bigint::oid",
            [(lock >> 32) & 0xFFFFFFFF, lock & 0xFFFFFFFF],
        )
        return {row[0] for row in cursor.fetchall()}


def _asking_for_a_lock(other_than: set[int]) -> list[int]:
    """Backend pids of other sessions (not ``other_than``) whose last statement asked for an advisory
    lock (a payer waiting for a claim polls ``pg_try_advisory_lock``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND query LIKE %s",
            ["%pg_try_advisory_lock%"],
        )
        return [row[0] for row in cursor.fetchall() if row[0] not in other_than]


def test_payment_claim__held_by_a_killed_worker_host_is_taken_over_by_another(
    lab: dict[str, Any],
    sciq_corpus,  # noqa: ANN001
    fake_mturk_server,  # noqa: ANN001
    settings,  # noqa: ANN001
    tmp_path: Path,
) -> None:
    """Two hosts run the same bonus (a retried command); the first dies holding the claim mid-payment.

    Host A's ``review_batch --bonus`` claims the key, writes its PAY_REQUESTED row and calls MTurk's
    SendBonus, whose answer the stand-in holds back. Host B runs the same bonus meanwhile: it keeps asking
    for the key's advisory lock and sends nothing while A lives. A is killed (SIGKILL, no clean-up):
    PostgreSQL ends its session and with it the lock, so B takes the claim over at once (its lease of 10
    minutes plays no part) and settles the payment with MTurk's idempotency token: one bonus paid.
    """
    if connection.vendor != "postgresql":
        pytest.skip("a claim is taken over across hosts by PostgreSQL's session advisory lock")
    settings.PUBLIC_BASE_URL = "http://testserver"
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="mturk", limit=1, reward_cents=50)
    )
    hit = batch.hits.get()
    fake = fake_mturk_server.fake
    fake.submit(hit.platform_ref, "W1", answers_for(hit))
    sync_batch(batch)
    assignment = Assignment.objects.get(hit=hit)
    approve_assignment(assignment)
    reason = "Thank you for a careful question"
    key = bonus_key(assignment, reason)
    balance = fake.balance_cents
    arrived, release = _held_sends(fake)
    command = [sys.executable, "manage.py", "review_batch", "--batch", str(batch.pk)]
    command += ["--bonus", str(assignment.pk), "--cents", "30", "--reason", reason]

    def host(name: str) -> subprocess.Popen:
        env = _host_env(tmp_path / f"{name}-var", lab["redis"])
        log = (tmp_path / f"{name}.log").open("w")
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    first = host("host-a")
    second = None
    try:
        assert arrived.wait(180), (tmp_path / "host-a.log").read_text()[-3000:]
        claim = PaymentClaim.objects.get(idempotency_key=key)
        assert claim.owner.split(":")[1] == str(first.pid)
        assert Payment.objects.get(idempotency_key=key).status == Payment.Status.SENT
        holder_backends = _lock_holders(key)
        assert len(holder_backends) == 1  # A's session holds the key's lock

        second = host("host-b")
        _wait("host B asking for the claim", lambda: _asking_for_a_lock(holder_backends), 180, tmp_path)
        time.sleep(2)  # B keeps asking while A lives: nothing is sent again
        assert second.poll() is None and fake.calls.count("SendBonus") == 1
        assert PaymentClaim.objects.get(idempotency_key=key).owner == claim.owner
        assert _lock_holders(key) == holder_backends

        os.killpg(first.pid, signal.SIGKILL)  # host A dies mid-payment, its answer never read
        first.wait(timeout=10)
        killed_at = time.monotonic()
        assert second.wait(timeout=60) == 0, (tmp_path / "host-b.log").read_text()[-3000:]
        assert time.monotonic() - killed_at < 30  # at once, not after the claim's lease
    finally:
        release.set()
        for process in (first, second):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)

    log_b = (tmp_path / "host-b.log").read_text()
    assert f"took over the claim of {claim.owner}, whose database session has ended" in log_b
    summary = json.loads(log_b.strip().splitlines()[-1])
    assert [b["key"] for b in summary["bonuses"]] == [key]
    assert len(fake.bonuses) == 1 and fake.balance_cents == balance - 30  # one payment on MTurk
    paid = Payment.objects.get(idempotency_key=key)
    assert paid.status == Payment.Status.CONFIRMED and paid.amount_cents == 30
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1
    assert not PaymentClaim.objects.exists()
