"""Real services for integration tests: a Redis server, Celery worker processes and Celery beat.

``REDIS_URL`` in the environment (CI) points at a running Redis; otherwise a throwaway ``redis-server``
is started on a free port. Workers are real ``celery worker`` processes that use the test database.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Optional

import pytest
from django.conf import settings
from django.db import connection
from kombu import pools

from config.celery import app as celery_app
from config.shared_data import require_shared_data

REPO = Path(settings.BASE_DIR)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _missing(what: str) -> None:
    if require_shared_data() or os.environ.get("CI"):
        pytest.fail(f"{what} is required in CI")
    pytest.skip(f"{what} is not available on this machine (scripts/setup.sh installs it as root)")


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a real Redis server (database 15, flushed, so a developer's data is never touched)."""
    url = os.environ.get("REDIS_URL")
    process: Optional[subprocess.Popen] = None
    if not url:
        binary = shutil.which("redis-server")
        if binary is None:
            _missing("redis-server")
        port = _free_port()
        process = subprocess.Popen(
            [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
            stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
    import redis

    base = url.rsplit("/", 1)[0] if url.count("/") > 2 else url
    test_url = f"{base}/15"
    client = redis.Redis.from_url(test_url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    client.flushdb()
    yield test_url
    client.flushdb()
    if process is not None:
        process.terminate()
        process.wait(timeout=10)


def database_url() -> str:
    """A URL for the test database, so worker processes read and write what the test sees."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or 'localhost'}:{db.get('PORT') or 5432}/{db['NAME']}"


WorkerFactory = Callable[..., subprocess.Popen]


def _celery_env(redis: Optional[str], var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER")}
    env["DATABASE_URL"] = database_url()
    env["CROWDQA_VAR_DIR"] = str(var_dir)
    if redis:
        env["REDIS_URL"] = redis
    return env


def start_celery_worker(
    queues: str, name: str, redis: Optional[str], var_dir: Path, log: Path
) -> subprocess.Popen:
    """A real ``celery worker`` process (node ``name@%h``) on the test database, with its own var dir;
    without ``redis`` it uses the embedded file broker under ``var_dir``."""
    with log.open("w") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues, "-n", f"{name}@%h"]
            + ["--pool", "solo", "--without-mingle", "--without-gossip", "--loglevel", "INFO"],
            cwd=REPO,
            env=_celery_env(redis, var_dir),
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def stop_processes(processes: list[subprocess.Popen]) -> None:
    """Stop processes (SIGTERM, then SIGKILL after 20 s) and reap them."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def celery_worker_process(tmp_path: Path) -> Iterator[WorkerFactory]:
    """Start real ``celery worker`` processes; all are stopped after the test."""
    processes: list[subprocess.Popen] = []

    def start(
        queues: str, name: str, redis: Optional[str], var_dir: Optional[Path] = None
    ) -> subprocess.Popen:
        process = start_celery_worker(
            queues, name, redis, var_dir or tmp_path / name, tmp_path / f"{name}.log"
        )
        processes.append(process)
        return process

    yield start
    stop_processes(processes)


@pytest.fixture
def celery_beat_process(tmp_path: Path) -> Iterator[Callable[[str], subprocess.Popen]]:
    """Start a real ``celery beat`` process on Redis (its schedule and log under ``tmp_path``, the log
    ``beat.log``); stopped after the test."""
    processes: list[subprocess.Popen] = []

    def start(redis: str) -> subprocess.Popen:
        with (tmp_path / "beat.log").open("w") as output:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO"]
                + ["--schedule", str(tmp_path / "beat-schedule")],
                cwd=REPO,
                env=_celery_env(redis, tmp_path / "beat"),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        processes.append(process)
        return process

    yield start
    stop_processes(processes)


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    """Point this process's Celery producer at the test Redis (the HIT view queues QC on commit)."""
    old = celery_app.conf.broker_url

    def reset() -> None:
        # Celery's connection and producer pools come from kombu's registries, keyed by broker URL: closing
        # the app's pool alone left a closed pool there for the next test on the same Redis
        # ("Acquire on closed pool"). kombu.pools.reset() closes and forgets them all.
        pools.reset()
        celery_app._pool = None
        celery_app.amqp._producer_pool = None

    reset()
    celery_app.conf.broker_url = redis_url
    yield redis_url
    reset()
    celery_app.conf.broker_url = old


__all__ = ["celery_app", "database_url"]
