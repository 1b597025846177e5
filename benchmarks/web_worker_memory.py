"""crowdqa's web workers before and after load, under several gunicorn configurations in the same run.

Each configuration serves its own round of the load of ``benchmarks/load_vs_turkle.py`` (the same real
SciQ HITs, claims and virtual users: page, submit, next HIT without pause) from a fresh gunicorn started
with ``-c gunicorn.conf.py -w WORKERS``, behind the buffering proxy as deployed (``CROWDQA_BEHIND_PROXY=1``:
2 threads per worker), and the configuration's environment (``GUNICORN_THREADS``, ``GUNICORN_PRELOAD``,
``MALLOC_ARENA_MAX``, ``CROWDQA_BEHIND_PROXY=0`` for a server with no proxy in front, or any gunicorn
option through ``GUNICORN_CMD_ARGS``). Per configuration it prints each web worker's memory when the
server is ready and after the round (RSS, PSS and USS, see :func:`load_processes.memory_mb`), the memory
of the whole server (PSS summed over the master and its workers) and the page and submit p50/p95. The
submissions' after-submission jobs are queued in a Redis of the run's own and not consumed: the web side
is as deployed, and no Celery worker competes for the CPU.

Why: the memory a web worker grows to comes from what it imports on its first requests and how much of
it is shared with the other workers; threads, malloc arenas and preloading are each a configuration
switch, so they are compared side by side on the same machine in one run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_mem .venv/bin/python \\
        benchmarks/web_worker_memory.py --users 50 --hits 25 --seconds 30 \\
        --config "before:GUNICORN_PRELOAD=0" --config "deployed:" \\
        --config "no-preload arenas 2:GUNICORN_PRELOAD=0,MALLOC_ARENA_MAX=2" \\
        --config "sync:GUNICORN_CMD_ARGS=-k sync"
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlsplit

from load_crowdqa_setup import sciq_items, setup_crowdqa, setup_crowdqa_claims
from load_processes import free_port, recreate_databases, server_memory, start, start_redis, wait_ready

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    """``label:KEY=VALUE,KEY=VALUE`` -> (label, environment)."""
    label, _, assignments = text.partition(":")
    env = dict(a.split("=", 1) for a in assignments.split(",") if a.strip())
    return label, env


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--config",
        action="append",
        required=True,
        help="LABEL:KEY=VALUE,... environment of one gunicorn configuration (repeat)",
    )
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--hits", type=int, default=25, help="HITs each virtual user holds per round")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of a round")
    parser.add_argument("--wait", type=float, default=0.0, help="mean think time before each HIT, seconds")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument(
        "--claims", action="store_true", help="each user claims its HITs in the round (signed-in workers)"
    )
    parser.add_argument("--data", type=Path, default=None, help="SciQ folder (default: shared data)")
    args = parser.parse_args()
    configs = [parse_config(c) for c in args.config]

    base = os.environ.get("DATABASE_URL", "")
    parts = urlsplit(base)
    if not base.startswith("postgres") or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("set DATABASE_URL to a PostgreSQL server on this machine (its database is re-created)")
    name = parts.path.lstrip("/") or "crowdqa_mem"
    with tempfile.TemporaryDirectory(prefix="crowdqa-mem-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        recreate_databases(base, [name])
        env = {
            **os.environ,
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_DEBUG": "0",
            "CROWDQA_VAR_DIR": str(work / "var"),
            "CROWDQA_DEMO": "0",
            # As deploy/systemd/crowdqa.env: behind the buffering proxy, whose part the load generator plays.
            "CROWDQA_BEHIND_PROXY": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        os.environ.update(env)
        import django

        django.setup()
        from config.shared_data import shared_data_dir

        data = args.data or shared_data_dir() / "sciq"
        items = sciq_items(data, args.users * args.hits * 3, at_least=args.users * 3)
        print(
            f"creating {args.users * args.hits} HITs{'' if args.claims else ' and claims'} for each of "
            f"{len(configs)} rounds ..."
        )
        setup = setup_crowdqa_claims if args.claims else setup_crowdqa
        setup(len(configs), args.users, args.hits, items, work)
        env["REDIS_URL"] = start_redis(stack, work)
        print(
            "| configuration | worker RSS MB at start -> after | worker USS MB at start -> after | "
            "server PSS MB at start -> after | page p50 / p95 ms | submit p50 / p95 ms | "
            + ("claim p50 / p95 ms | " if args.claims else "")
            + "submits | load |"
        )
        print("|---|---|---|---|---|---|---|" + ("---|" if args.claims else "") + "---|")
        for number, (label, extra) in enumerate(configs):
            port = free_port()
            with ExitStack() as server:
                master = start(
                    server,
                    [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py"]
                    + ["-b", f"127.0.0.1:{port}", "-w", str(args.web_workers)],
                    ROOT,
                    {**env, **extra},
                    work / f"gunicorn-{number}.log",
                )
                host = f"http://127.0.0.1:{port}"
                wait_ready(host + "/health/")
                time.sleep(2)
                before, before_total = server_memory(master.pid)
                out = work / f"times-{number}.json"
                subprocess.run(
                    [sys.executable, str(ROOT / "benchmarks" / "load_users.py")]
                    + ["--plan", str(work / f"crowdqa-{number}.json"), "--host", host, "--out", str(out)]
                    + ["--seconds", str(args.seconds), "--wait", str(args.wait)],
                    check=True,
                    timeout=args.seconds + 120,
                )
                after, after_total = server_memory(master.pid)
            result = json.loads(out.read_text())
            times, failed = result["times"], sum(sum(c.values()) for c in result["failures"].values())

            def span(key: str, a: list[dict[str, float]] = before, b: list[dict[str, float]] = after) -> str:
                start, end = statistics.median(w[key] for w in a), statistics.median(w[key] for w in b)
                return f"{start:.0f} -> {end:.0f} (max {max(w[key] for w in b):.0f})"

            print(
                f"| {label} | {span('rss')} | {span('uss')} | {before_total:.0f} -> {after_total:.0f} | "
                f"{percentile(times['page'], 50):.0f} / {percentile(times['page'], 95):.0f} | "
                f"{percentile(times['submit'], 50):.0f} / {percentile(times['submit'], 95):.0f} | "
                + (
                    f"{percentile(times['claim'], 50):.0f} / {percentile(times['claim'], 95):.0f} | "
                    if args.claims
                    else ""
                )
                + f"{len(times['submit'])}{f' ({failed} failed)' if failed else ''} | "
                f"{os.getloadavg()[0]:.1f} |",
                flush=True,
            )
        print(
            f"{args.users} users, {args.seconds:.0f} s rounds, {args.web_workers} web workers; worker "
            "figures are medians over the workers; load average at the end "
            + " ".join(f"{x:.1f}" for x in os.getloadavg())
            + f" on {os.cpu_count()} cores"
        )


if __name__ == "__main__":
    main()
