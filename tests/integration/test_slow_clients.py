"""Slow clients against the served app: gunicorn started with the project's ``gunicorn.conf.py`` and no
proxy in front (``CROWDQA_BEHIND_PROXY`` unset: 8 threads per worker).

Four connections send their headers and four their body one byte at a time (the slowloris pattern);
while they are open, ``/health/`` and the sign-in page must answer within a second. With sync workers
(the settings before ``gthread``) the eight connections hold both workers and neither page answers.
A worker whose threads are all held takes no more connections (``worker_connections = threads``): the
other workers answer them, where a worker left at gunicorn's default of 1,000 connections would queue
them behind the held threads.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from tests.integration.conftest import REPO, _free_port, database_url

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SLOW_HEADERS = 4
SLOW_BODIES = 4
TRICKLE_SECONDS = 0.5  # one byte per connection every half second, for the whole test


@contextmanager
def _gunicorn(tmp_path: Path, **extra_env: str) -> Iterator[str]:
    """gunicorn as deployed (``-c gunicorn.conf.py``, two workers as in scripts/demo.sh); its base URL."""
    port = _free_port()
    unset = ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "CROWDQA_BEHIND_PROXY", "GUNICORN_THREADS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(DATABASE_URL=database_url(), CROWDQA_VAR_DIR=str(tmp_path / "var"), **extra_env)
    log = (tmp_path / "web.log").open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "config.wsgi"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "2"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                requests.get(f"{url}/health/", timeout=5)
                break
            except requests.RequestException:
                time.sleep(0.1)
        else:
            raise AssertionError(f"gunicorn did not start; see {tmp_path / 'web.log'}")
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()


@pytest.fixture
def served(tmp_path: Path, settings) -> Iterator[str]:  # noqa: ANN001
    with _gunicorn(tmp_path) as url:
        yield url


class Trickler:
    """Slow connections, each fed one byte per ``TRICKLE_SECONDS`` until :meth:`close`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: list[tuple[socket.socket, bytes]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def open(self, first: bytes, rest: bytes) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        sock.sendall(first)
        self.streams.append((sock, rest))

    def _run(self) -> None:
        position = 0
        while not self.stop.wait(TRICKLE_SECONDS):
            for sock, rest in self.streams:
                try:
                    sock.send(rest[position % len(rest) : position % len(rest) + 1])
                except OSError:
                    pass  # the server closed it: that is allowed
            position += 1

    def __enter__(self) -> Trickler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
        for sock, _ in self.streams:
            sock.close()


def _timed_answer(url: str, timeout: float) -> tuple[float, int | None, dict[str, str]]:
    """Seconds until the answer, its status (None: none within ``timeout``) and its headers."""
    started = time.monotonic()
    try:
        response = requests.get(url, timeout=timeout)
    except requests.RequestException:
        return time.monotonic() - started, None, {}
    return time.monotonic() - started, response.status_code, dict(response.headers)


def test_slow_clients__health_and_sign_in_page_answer_within_a_second(served: str) -> None:
    port = int(served.rsplit(":", 1)[1])
    header_line = b"X-Slow: " + b"a" * 2000 + b"\r\n"
    body = b"username=slow&password=" + b"x" * 2000
    for _ in range(4):  # both workers load their templates first: the test measures waiting, not start-up
        for path in ("/health/", "/accounts/login/"):
            requests.get(served + path, timeout=10)
    with Trickler(port) as slow:
        for _ in range(SLOW_HEADERS):
            slow.open(b"GET /health/ HTTP/1.1\r\nHost: 127.0.0.1\r\n", header_line)
        for _ in range(SLOW_BODIES):
            head = (
                "POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                "Content-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {len(body) + 100000}\r\n\r\n"
            )
            slow.open(head.encode() + body[:10], body)
        slow.thread.start()
        time.sleep(3 * TRICKLE_SECONDS)  # every slow connection has been accepted and is mid-request
        probes = ("/health/", "/accounts/login/", "/health/")
        timings = [(path, *_timed_answer(served + path, 5)[:2]) for path in probes]
        # The slow connections are still open and trickling while the pages answered.
        assert slow.thread.is_alive()
    print("with slow clients open:", ", ".join(f"{p} {e * 1000:.0f} ms ({s})" for p, e, s in timings))
    for path, elapsed, status in timings:
        assert status == 200, f"{path}: no answer within 5 s ({elapsed:.2f} s) with slow clients open"
        assert elapsed < 1.0, f"{path}: {elapsed:.2f} s with slow clients open"


def test_a_worker_with_every_thread_held_leaves_new_connections_to_the_others(tmp_path: Path) -> None:
    """One thread per worker: a slow request holds one worker's only thread; requests sent meanwhile, 10
    at a time, are all answered by the other worker, each on a connection closed after the response."""
    with _gunicorn(tmp_path, GUNICORN_THREADS="1") as url:
        port = int(url.rsplit(":", 1)[1])
        for _ in range(4):
            requests.get(url + "/health/", timeout=10)
        with Trickler(port) as slow:
            slow.open(b"GET /health/ HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 2000 + b"\r\n")
            slow.thread.start()
            time.sleep(3 * TRICKLE_SECONDS)
            with ThreadPoolExecutor(max_workers=10) as pool:  # at once: each worker's loop sees some
                answers = list(pool.map(lambda _: _timed_answer(url + "/health/", 3), range(20)))
            assert slow.thread.is_alive()
    for elapsed, status, headers in answers:
        assert status == 200, f"no answer within 3 s ({elapsed:.2f} s) while one worker's thread is held"
        assert elapsed < 1.0, f"{elapsed:.2f} s while one worker's thread is held"
        assert headers.get("Connection", "").lower() == "close"
