"""Processes and their cost for the load benchmarks: servers started and stopped, readiness, CPU from /proc.

Why: ``load_vs_turkle.py`` and ``after_submission_cost.py`` charge each system for the CPU of its web
workers, its Celery worker and the database server (backends that ended included), read the same way
from ``/proc``, and start their servers the same way so none outlives a failed run.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Optional
from urllib.parse import urlsplit, urlunsplit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"/{name}"))


def recreate_databases(base: str, names: list[str]) -> None:
    """Drop and create the benchmark's own databases on ``base``'s server."""
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')


def drop_databases(base: str, names: list[str]) -> None:
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory_mb(pid: int) -> dict[str, float]:
    """Resident (RSS), proportional (PSS) and unique (USS) memory of a process, MB.

    RSS counts every page the process maps, those it shares with the processes forked from the same
    parent included; PSS charges a shared page 1/n to each of its n sharers (PSS summed over a
    server's processes is the memory the server holds); USS is what the process alone holds, what
    ending it would free.
    """
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    except OSError:
        return {"rss": float("nan"), "pss": float("nan"), "uss": float("nan")}
    kb = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in lines)}
    return {
        "rss": kb["Rss"] / 1024,
        "pss": kb["Pss"] / 1024,
        "uss": (kb["Private_Clean"] + kb["Private_Dirty"]) / 1024,
    }


def server_memory(master: int) -> tuple[list[dict[str, float]], float]:
    """Each worker's :func:`memory_mb` under a server's master, and the PSS of the master and its
    workers together (the memory the whole server holds)."""
    workers = [memory_mb(p) for p in children(master)]
    return workers, memory_mb(master)["pss"] + sum(w["pss"] for w in workers)


def celery_worker_command(concurrency: int, beat_schedule: Optional[Path] = None) -> list[str]:
    """The default-queue Celery worker as the benchmarks run it beside the web workers: the flags and
    the CPU priority (``Nice=10``) of ``docs/deployment.md`` and ``deploy/systemd/crowdqa-worker@.service``,
    with the pool size the benchmark asks for; with ``beat_schedule``, beat runs inside it (``-B``, as
    the demo runs it), whose dispatcher runs the batched follow-ups, so its CPU counts as the worker's."""
    priority = ["nice", "-n", "10"]
    worker = [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "-P", "prefork"]
    events_off = ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    beat = ["-B", "--schedule", str(beat_schedule)] if beat_schedule else []
    return priority + worker + ["-c", str(concurrency)] + events_off + beat + ["-l", "warning"]


def start_redis(stack: ExitStack, work: Path) -> str:
    """A throw-away Redis of the run's own (no persistence) on a free port; returns its URL."""
    port = free_port()
    start(
        stack,
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        work,
        dict(os.environ),
        work / "redis.log",
    )
    return f"redis://127.0.0.1:{port}/0"


def wait_ready(url: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    sys.exit(f"server did not answer {url}")


def start(
    stack: ExitStack, command: list[str], cwd: Path, env: dict[str, str], log: Path
) -> subprocess.Popen:
    handle = stack.enter_context(log.open("wb"))
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=handle, stderr=subprocess.STDOUT)

    def stop() -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    stack.callback(stop)
    return process


TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int, waited_children: bool = False) -> float:
    """CPU seconds (user + system) of a process, plus those of its exited, reaped children if asked."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # the process ended between listing and reading
        return 0.0
    used = int(fields[11]) + int(fields[12])  # utime, stime
    if waited_children:
        used += int(fields[13]) + int(fields[14])  # cutime, cstime
    return used / TICKS


def machine_busy() -> float:
    """CPU seconds the whole machine spent busy (all cores, everything but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / TICKS


def postmaster_pid(url: str) -> int:
    """The PostgreSQL server process (the parent of this connection's backend), on this machine."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    return int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])


class CpuMeter:
    """CPU spent during a round by the system's web workers, the database server and the load generator.

    The database's share counts every PostgreSQL process, including backends that ended during the
    round (their time is added to the server process's reaped-children total), so a system that opens a
    connection per request is charged for it. Only one system runs at a time, so the server's work in a
    round is that system's.
    """

    def __init__(self, web_master: int, postmaster: int, celery: int = 0) -> None:
        self.web_master, self.postmaster, self.celery = web_master, postmaster, celery

    def snapshot(self) -> dict[str, float]:
        generator = resource.getrusage(resource.RUSAGE_CHILDREN)
        celery = 0.0
        if self.celery:
            celery = process_cpu(self.celery, waited_children=True) + sum(
                process_cpu(p) for p in children(self.celery)
            )
        return {
            "web": sum(process_cpu(p) for p in children(self.web_master)),
            "celery": celery,
            "database": process_cpu(self.postmaster, waited_children=True)
            + sum(process_cpu(p) for p in children(self.postmaster)),
            "load generator": generator.ru_utime + generator.ru_stime,
            "machine": machine_busy(),
        }
