"""The cost of a persistent connection's health check, Django's ``SELECT 1`` against the check that
asks nothing of a connection in use (``config/postgresql/base.py``), on a local PostgreSQL.

Each round calls ``is_usable()`` ``--calls`` times on one open connection, the two ways alternately
(Django's check is forced by letting the connection's quiet time run out before each call), and counts
the CPU of this process and of the connection's server process (``/proc/<pid>/schedstat``), per call.
A request that reuses a connection makes one check, so a HIT (its page and its submit) makes two.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/health_check.py --rounds 6 --calls 3000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection, connections  # noqa: E402

from config.postgresql import base  # noqa: E402


def server_cpu_ms(pid: int) -> float:
    """CPU time of a server process on this machine so far, ms."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6


def measure(calls: int, ask: bool) -> tuple[float, float]:
    """(this process's, the server's) CPU per ``is_usable()`` call, ms."""
    pid = connection.connection.info.backend_pid
    cpu, server = time.process_time(), server_cpu_ms(pid)
    for _ in range(calls):
        if ask:
            connection.usable_at = None
        assert connection.is_usable()
    return (time.process_time() - cpu) * 1000 / calls, (server_cpu_ms(pid) - server) / calls


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    if not isinstance(connections["default"], base.DatabaseWrapper):
        sys.exit("set DATABASE_URL to a PostgreSQL server on this machine")
    connection.ensure_connection()
    results: dict[str, list[tuple[float, float]]] = {"SELECT 1": [], "no round trip": []}
    measure(200, True), measure(200, False)  # warm-up
    for number in range(args.rounds):
        order = [True, False] if number % 2 == 0 else [False, True]
        for ask in order:
            results["SELECT 1" if ask else "no round trip"].append(measure(args.calls, ask))
    load = os.getloadavg()[0]
    print(f"{args.rounds} rounds of {args.calls} calls each way, alternating; load average {load:.1f}")
    print("| check | web process CPU per check, ms (median, range) | server CPU per check, ms |")
    print("|---|---|---|")
    for label, values in results.items():
        web, server = [v[0] for v in values], [v[1] for v in values]
        print(
            f"| {label} | {statistics.median(web):.4f} ({min(web):.4f}-{max(web):.4f}) | "
            f"{statistics.median(server):.4f} ({min(server):.4f}-{max(server):.4f}) |"
        )


if __name__ == "__main__":
    main()
