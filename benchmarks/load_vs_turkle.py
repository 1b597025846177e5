"""crowdqa and Turkle 3.1.0 under the same load, side by side: HIT page and submit latency, completed HITs
per second and the CPU each completed HIT cost, with crowdqa measured as deployed.

Three systems serve the same SciQ question HITs (three real ~80-word SciQ passages, a choice among them,
a question and its answer), each from its own PostgreSQL database on the same server, each with 4
gunicorn worker processes (``--web-workers``) bound to 127.0.0.1 with DEBUG off: crowdqa as deployed
behind the buffering reverse proxy of docs/deployment.md (``CROWDQA_BEHIND_PROXY=1``, as
``deploy/systemd/crowdqa.env`` sets) with ``-c gunicorn.conf.py`` (``gthread`` workers with
``GUNICORN_THREADS`` threads each, 2 behind the proxy, the application preloaded in the master;
``--crowdqa-env`` changes that, e.g. ``GUNICORN_PRELOAD=0``, or ``CROWDQA_BEHIND_PROXY=0`` for a server
with no proxy in front and 8 threads) and its Celery worker on the same machine (Redis broker)
consuming every after-submission job; Turkle with gunicorn's default ``sync`` workers (one request at a
time per worker, which gunicorn's documentation puts behind a buffering proxy too) and Django's default
``CONN_MAX_AGE=0`` (a database connection per request); and Turkle with persistent connections
(``CONN_MAX_AGE=600``, as crowdqa has). Every virtual user (locust, ``benchmarks/load_users.py``) is a
worker holding more claimed HITs than it can do in a round: it opens a HIT's page, submits the passage's
real SciQ question and answer, and goes on to its next HIT without pause. Rounds last ``--seconds``
(time-bounded; a round where users ran out of HITs says so), the systems take turns in a rotated order,
after one warm-up round each that is not counted. A crowdqa round ends when every job its submissions
queued has run (the drain's time and CPU count). Per round the script prints p50/p95 of the page and
the submit, the completed HITs per second, and the CPU per completed HIT of the web workers, the Celery
worker, the PostgreSQL server (backends that ended included), the load generator and the whole machine
(``/proc``, :class:`CpuMeter`); then the paired per-round ratios of crowdqa against each Turkle, the
memory of the web workers when ready and after the load (RSS, PSS and USS, see
``load_processes.memory_mb``: with a preloaded application RSS counts the pages a worker shares with the
others, PSS charges each sharer 1/n of them) and of the Celery worker, and whether every acknowledged
submission is stored.

"Page" is what a worker waits for before seeing the HIT: crowdqa's signed link (one request); Turkle's
assignment page plus the iframe that holds the task form (two requests; Turkle's first request alone is
``page1``). "Submit" is the POST alone (Turkle answers with a redirect, which is not followed).

Without ``--wait`` every user always waits on a request, so the rounds measure capacity (completed HITs
per second, CPU per HIT); their latencies are then the users over the throughput (Little's law), split
between the load generator, the listening socket's queue and the workers by how the kernel shares the
cores among them, all on this machine. The last lines say so per system: the requests per completed HIT,
the mean request's time against the users over the requests per second, and how far each p95 is above
its p50 in milliseconds. ``--wait`` paces the users (a think time before each HIT), so
that the latencies are read at a load both servers keep up with (benchmarks/RESULTS.md, "Saturated
tails: where a request's wait goes").

``--claims`` puts the claim in the round (by default every HIT is claimed before it): each user claims
its next HIT through the system's own "next HIT" (crowdqa: a signed-in local worker's POST to
``/work/batches/<id>/next/``; Turkle: "accept next task", which locks every unfinished task of its batch)
and follows the redirect to the HIT; all users work the round's batches (about 970 HITs each) in the same
order. The claim's p50/p95 are printed apart and count among each HIT's requests.

``--variant KEY=VALUE`` (repeat) adds a fourth system, ``crowdqa-variant``: a second crowdqa gunicorn
with that environment on top of crowdqa's (e.g. ``GUNICORN_CMD_ARGS=--threads 16 --keep-alive 5``),
with its own HITs per round in the same database and the same Celery worker, taking its turn in the
rotation like the others; the script then also prints the paired ratios of the variant against crowdqa
as deployed. Why: a change to the deployment is judged on rounds alternated in one run, not on two runs
an hour apart.

Preparing Turkle (never vendored into this repository), e.g. under /tmp::

    # the Turkle 3.1.0 source (git tag 3.1.0 of github.com/hltcoe/turkle), unpacked in /tmp/turkle
    git clone --branch 3.1.0 --depth 1 https://github.com/hltcoe/turkle /tmp/turkle
    python3 -m venv /tmp/turkle-venv
    /tmp/turkle-venv/bin/pip install -r /tmp/turkle/requirements.txt gunicorn "psycopg[binary]"

Then (PostgreSQL from ``DATABASE_URL``'s server; the databases ``crowdqa_load``, ``turkle_load`` and
``turkle_load_p`` are dropped and re-created)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_load .venv/bin/python \\
        benchmarks/load_vs_turkle.py --turkle /tmp/turkle --turkle-python /tmp/turkle-venv/bin/python \\
        --users 50 --hits 40 --rounds 3 --seconds 60
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
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from load_crowdqa_setup import owed_followups, sciq_items, setup_crowdqa, setup_crowdqa_claims, stored_crowdqa
from load_processes import (
    CpuMeter,
    celery_worker_command,
    children,
    database_url,
    drop_databases,
    free_port,
    postmaster_pid,
    recreate_databases,
    rss_mb,
    server_memory,
    start,
    start_redis,
    wait_ready,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SYSTEMS = ("crowdqa", "turkle", "turkle-persistent")
TURKLES = ("turkle", "turkle-persistent")
#: Each Turkle's database and ``CONN_MAX_AGE``: Django's default (a connection per request), and
#: persistent connections as crowdqa has.
TURKLE_DATABASES = {"turkle": ("turkle_load", 0), "turkle-persistent": ("turkle_load_p", 600)}
TURKLE_SETTINGS = """
from turkle_site.settings import *  # noqa: F401,F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
DATABASES = {{"default": {{"ENGINE": "django.db.backends.postgresql", "NAME": {name!r}, "USER": {user!r},
              "PASSWORD": {password!r}, "HOST": {host!r}, "PORT": {port!r}, "CONN_MAX_AGE": {conn_max_age}}}}}
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def run_round(
    system: str,
    number: int,
    host: str,
    work: Path,
    args: argparse.Namespace,
    meter: CpuMeter,
    drain: Any = None,
) -> dict[str, Any]:
    """One bounded round of one system; with ``drain``, the round also waits until every job it
    queued has run, and the CPU and the time it took count."""
    out = work / f"times-{system}-{number}.json"
    before = meter.snapshot()
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "load_users.py"),
            "--plan",
            str(work / f"{system}-{number}.json"),
        ]
        + ["--host", host, "--out", str(out), "--seconds", str(args.seconds), "--wait", str(args.wait)],
        check=True,
        timeout=args.seconds + 120,
    )
    drained = time.monotonic()
    if drain is not None:
        drain(number)
    drained = time.monotonic() - drained
    after = meter.snapshot()
    result = json.loads(out.read_text())
    result["drain_seconds"] = drained
    result["load"] = os.getloadavg()[0]
    result["cpu"] = {k: after[k] - before[k] for k in before}
    return result


def summary(result: dict[str, Any]) -> dict[str, float]:
    times = result["times"]
    row = {}
    for name in ("page", "submit", "page1", "claim"):
        values = times.get(name, times.get("page", []) if name == "page1" else [])
        row[f"{name}_p50"] = percentile(values, 50)
        row[f"{name}_p95"] = percentile(values, 95)
        row[f"{name}_n"] = len(values)
    row["failed"] = sum(sum(c.values()) for c in result["failures"].values())
    row["submits_per_s"] = row["submit_n"] / result["seconds"]
    # completed HITs per second with every after-submission job consumed (crowdqa's drain counted)
    row["hits_per_s"] = row["submit_n"] / (result["seconds"] + result.get("drain_seconds", 0.0))
    # "page" is the whole page wait; where it took two requests, "page1" and "page2" count them
    singles = [v for k, v in times.items() if not (k == "page" and "page1" in times)]
    requests = sum(len(v) for v in singles)
    row["requests_per_s"] = requests / result["seconds"]
    row["requests_per_hit"] = requests / max(row["submit_n"], 1)
    row["request_mean"] = sum(sum(v) for v in singles) / max(requests, 1)
    # Little's law for users who always wait on a request: the mean time from one request's start to
    # the same user's next one; what it exceeds request_mean by is spent in the load generator
    row["request_cycle"] = result["users"] * 1000 / max(row["requests_per_s"], 1e-9)
    for name in ("page", "submit"):
        row[f"{name}_spread"] = row[f"{name}_p95"] - row[f"{name}_p50"]
    for part, seconds in result.get("cpu", {}).items():
        row[f"cpu_{part}"] = seconds * 1000 / max(requests, 1)
        row[f"hit_cpu_{part}"] = seconds * 1000 / max(row["submit_n"], 1)
    cpu = result.get("cpu", {})
    row["hit_cpu_counted"] = sum(cpu.get(k, 0.0) for k in COUNTED) * 1000 / max(row["submit_n"], 1)
    return row


def claim_line(row: dict[str, float]) -> str:
    return f"claim p50/p95 {row['claim_p50']:.0f} / {row['claim_p95']:.0f} ms ({row['claim_n']}), "


#: The CPU counted per completed HIT: the system's web workers, its Celery worker and the database.
COUNTED = ("web", "celery", "database")


def turkle_env(work: Path, system: str, args: argparse.Namespace, parts: Any) -> dict[str, str]:
    """The environment of one Turkle (its own settings module and database)."""
    name, conn_max_age = TURKLE_DATABASES[system]
    module = f"load_{system.replace('-', '_')}_settings"
    (work / f"{module}.py").write_text(
        TURKLE_SETTINGS.format(
            name=name,
            user=parts.username or "postgres",
            password=parts.password or "",
            host=parts.hostname,
            port=str(parts.port or 5432),
            conn_max_age=conn_max_age,
        )
    )
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": f"{work}:{args.turkle}",
        "DJANGO_SETTINGS_MODULE": module,
    }


def start_celery(stack: ExitStack, env: dict[str, str], work: Path, concurrency: int) -> subprocess.Popen:
    """crowdqa's Celery worker with beat inside it (whose dispatcher runs the follow-ups of the
    submissions), as deployed beside the web workers; returns once it consumes its queue."""
    import redis

    worker = start(
        stack,
        celery_worker_command(concurrency, beat_schedule=work / "beat-schedule"),
        ROOT,
        env,
        work / "celery.log",
    )
    client = redis.Redis.from_url(env["REDIS_URL"])
    deadline = time.monotonic() + 180
    while not client.exists("_kombu.binding.default"):
        if time.monotonic() > deadline or worker.poll() is not None:
            sys.exit("the Celery worker did not start: " + (work / "celery.log").read_text(errors="replace"))
        time.sleep(0.2)
    return worker


def crowdqa_web_config(env: dict[str, str], workers: int) -> str:
    """What crowdqa's gunicorn runs: ``gunicorn.conf.py`` read under ``env``, with the options of
    ``GUNICORN_CMD_ARGS`` that override it (gunicorn applies those after the file)."""
    import runpy
    import shlex

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    words = shlex.split(env.get("GUNICORN_CMD_ARGS", ""))
    flags = {"-k": "worker_class", "--worker-class": "worker_class", "--threads": "threads"}
    flags |= {"--worker-connections": "worker_connections", "--keep-alive": "keepalive"}
    for flag, value in zip(words, words[1:], strict=False):
        if flag in flags:
            conf[flags[flag]] = value
    if conf["worker_class"] != "gthread":
        return f"{workers} gunicorn {conf['worker_class']} workers"
    connections = conf.get("worker_connections", 1000)
    keepalive = f"keep-alive {conf['keepalive']} s" if int(conf.get("keepalive", 2)) else "no keep-alive"
    preload = "preloaded" if conf.get("preload_app") else "not preloaded"
    return (
        f"{workers} gunicorn gthread workers x {conf['threads']} threads, {connections} connections each, "
        f"{keepalive} ({preload})"
    )


Memory = tuple[list[dict[str, float]], float]


def describe_memory(start: Memory, after: Memory) -> str:
    parts = []
    for key in ("rss", "pss", "uss"):
        before_values = ", ".join(f"{w[key]:.0f}" for w in start[0])
        after_values = ", ".join(f"{w[key]:.0f}" for w in after[0])
        parts.append(f"{key.upper()} {before_values} -> {after_values}")
    return "; ".join(parts) + f"; server PSS {start[1]:.0f} -> {after[1]:.0f}"


def print_results(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """Per-round figures of each system, then the paired ratios against each Turkle."""
    print(
        "| round | system | page p50 / p95 ms | submit p50 / p95 ms | HITs | round s + drain s | "
        "completed HITs/s | CPU ms per HIT web / celery / database (counted) | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for number in range(len(results["crowdqa"])):
        for system in results:
            r = results[system][number]
            row = summary(r)
            print(
                f"| {number + 1} | {system} | {row['page_p50']:.0f} / {row['page_p95']:.0f} | "
                f"{row['submit_p50']:.0f} / {row['submit_p95']:.0f} | {row['submit_n']} | "
                f"{r['seconds']:.0f} + {r.get('drain_seconds', 0):.1f} | {row['hits_per_s']:.1f} | "
                f"{row['hit_cpu_web']:.1f} / {row['hit_cpu_celery']:.1f} / {row['hit_cpu_database']:.1f} "
                f"({row['hit_cpu_counted']:.1f}) | {r['load']:.1f} |"
            )
    keys = ("page_p95", "submit_p50", "submit_p95", "page1_p95", "hits_per_s", "hit_cpu_counted")
    keys += ("claim_p50", "claim_p95") if args.claims else ()
    print(
        "paired ratios crowdqa / Turkle, median over rounds (range); targets with persistent connections: "
        "page p95 <= 0.3, submit p95 <= 0.5, completed HITs/s >= 2.5, CPU per completed HIT (web + Celery + "
        "database) <= 0.5"
    )
    pairs = [("crowdqa", turkle) for turkle in TURKLES]
    if "crowdqa-variant" in results:
        pairs += [("crowdqa-variant", turkle) for turkle in TURKLES] + [("crowdqa-variant", "crowdqa")]
    for system, other in pairs:
        print(f"  {system} against {other}:")
        for key in keys:
            values = [
                summary(c)[key] / summary(t)[key]
                for c, t in zip(results[system], results[other], strict=True)
            ]
            print(f"    {key}: {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
    print("CPU ms per completed HIT, median over the counted rounds:")
    for system in results:
        parts = ("web", "celery", "database", "load generator", "machine")
        medians = {k: statistics.median(summary(r)[f"hit_cpu_{k}"] for r in results[system]) for k in parts}
        print(f"  {system}: " + ", ".join(f"{k} {v:.1f}" for k, v in medians.items()))
    print(
        "each request's wait, median over the counted rounds: requests per completed HIT; request mean ms "
        "(every request, each of a two-request page apart); users / requests per second ms (the mean time "
        "from a user's request to its next, Little's law); p95 - p50 ms of the page and the submit"
    )
    for system in results:
        parts = ("requests_per_hit", "request_mean", "request_cycle", "page_spread", "submit_spread")
        m = {k: statistics.median(summary(r)[k] for r in results[system]) for k in parts}
        print(
            f"  {system}: {m['requests_per_hit']:.2f} requests per HIT, "
            f"request mean {m['request_mean']:.0f}, users / requests per second {m['request_cycle']:.0f}, "
            f"p95 - p50 page {m['page_spread']:.0f} submit {m['submit_spread']:.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turkle", type=Path, required=True, help="Turkle 3.1.0 source checkout")
    parser.add_argument("--turkle-python", type=Path, required=True, help="python of Turkle's virtualenv")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--hits", type=int, default=100, help="HITs each virtual user holds per round (more than it can do)"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="length of a round")
    parser.add_argument(
        "--wait", type=float, default=0.0, help="mean think time before each HIT, seconds (see load_users.py)"
    )
    parser.add_argument("--claims", action="store_true", help="each user claims its HITs in the round")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--celery-workers", type=int, default=2, help="crowdqa's Celery pool processes")
    parser.add_argument(
        "--crowdqa-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment of crowdqa's gunicorn (repeat): GUNICORN_THREADS, GUNICORN_PRELOAD=0, ...",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="run a second crowdqa gunicorn with this environment too, alternated with the others (repeat)",
    )
    parser.add_argument("--data", type=Path, default=None, help="SciQ folder (default: shared data)")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    args = parser.parse_args()

    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL URL (its server is used; its database name is not)")
    parts = urlsplit(base)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("the benchmark runs against a PostgreSQL server on this machine only")
    names = ["crowdqa_load"] + [TURKLE_DATABASES[t][0] for t in TURKLES]
    crowdqa_db = database_url(base, names[0])
    os.environ["DATABASE_URL"] = crowdqa_db
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.shared_data import shared_data_dir

    data = args.data or shared_data_dir() / "sciq"
    total_rounds = args.rounds + 1  # round 0 warms every server up and is not counted
    systems = ("crowdqa", "crowdqa-variant", *TURKLES) if args.variant else SYSTEMS
    crowdqa_systems = [s for s in systems if s.startswith("crowdqa")]
    #: Where each crowdqa system's HITs of a round are: the variant's round n uses set-up round T + n.
    setup_round = {"crowdqa": 0, "crowdqa-variant": total_rounds}

    with tempfile.TemporaryDirectory(prefix="crowdqa-load-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        recreate_databases(base, names)
        if not args.keep:
            stack.callback(drop_databases, base, names)
        crowdqa_env = {
            **os.environ,
            "DATABASE_URL": crowdqa_db,
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_DEBUG": "0",
            "CROWDQA_VAR_DIR": str(work / "var"),
            "CROWDQA_DEMO": "0",
            # As deploy/systemd/crowdqa.env: behind the buffering proxy, whose part the load generator plays.
            "CROWDQA_BEHIND_PROXY": "1",
        }
        turkle_envs = {t: turkle_env(work, t, args, parts) for t in TURKLES}
        print("migrating the databases ...", flush=True)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=crowdqa_env, check=True)
        for env in turkle_envs.values():
            subprocess.run(
                [str(args.turkle_python), "manage.py", "migrate", "-v0"], cwd=args.turkle, env=env, check=True
            )
        os.environ.update(crowdqa_env)
        import django

        django.setup()
        items = sciq_items(data, args.users * args.hits * 3, at_least=args.users * 3)
        words = statistics.mean(len(p.split()) for p, _, _ in items)
        print(
            f"creating {args.users * args.hits} HITs{'' if args.claims else ' and claims'} per round and "
            f"system: {len(items)} SciQ "
            f"passages ({words:.0f} words on average) ...",
            flush=True,
        )
        setup = setup_crowdqa_claims if args.claims else setup_crowdqa
        contents = setup(total_rounds * len(crowdqa_systems), args.users, args.hits, items, work)
        for number in range(total_rounds * (len(crowdqa_systems) - 1)):
            (work / f"crowdqa-{total_rounds + number}.json").rename(work / f"crowdqa-variant-{number}.json")
        (work / "hits.json").write_text(json.dumps({"rounds": contents[:total_rounds], "users": args.users}))
        for turkle, env in turkle_envs.items():
            out = work / turkle
            out.mkdir()
            command = "setup-claims" if args.claims else "setup"
            subprocess.run(
                [str(args.turkle_python), str(ROOT / "benchmarks" / "load_turkle_setup.py"), command]
                + [str(work / "hits.json"), str(out)],
                cwd=args.turkle,
                env=env,
                check=True,
            )
            for number in range(total_rounds):
                (out / f"turkle-{number}.json").rename(work / f"{turkle}-{number}.json")

        crowdqa_env["REDIS_URL"] = start_redis(stack, work)
        celery = start_celery(stack, crowdqa_env, work, args.celery_workers)
        ports = {s: free_port() for s in systems}
        web_env = dict(a.split("=", 1) for a in args.crowdqa_env)
        web_envs = {
            "crowdqa": web_env,
            "crowdqa-variant": {**web_env, **dict(a.split("=", 1) for a in args.variant)},
        }
        crowdqa_web = {
            s: crowdqa_web_config({**crowdqa_env, **web_envs[s]}, args.web_workers) for s in crowdqa_systems
        }
        masters = {
            system: start(
                stack,
                [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py"]
                + ["-b", f"127.0.0.1:{ports[system]}", "-w", str(args.web_workers)],
                ROOT,
                {**crowdqa_env, **web_envs[system]},
                work / f"{system}.log",
            )
            for system in crowdqa_systems
        }
        for turkle, env in turkle_envs.items():
            masters[turkle] = start(
                stack,
                [str(args.turkle_python), "-m", "gunicorn", "turkle_site.wsgi:application"]
                + ["-b", f"127.0.0.1:{ports[turkle]}", "-w", str(args.web_workers)],
                args.turkle,
                env,
                work / f"{turkle}.log",
            )
        hosts = {s: f"http://127.0.0.1:{p}" for s, p in ports.items()}
        for system in crowdqa_systems:
            wait_ready(hosts[system] + "/health/")
        for turkle in TURKLES:
            wait_ready(hosts[turkle] + "/login/")
        time.sleep(2)
        start_memory = {s: server_memory(m.pid) for s, m in masters.items()}

        def drain(system: str, number: int) -> None:
            deadline = time.monotonic() + 900
            while owed_followups(setup_round[system] + number):
                if time.monotonic() > deadline:
                    sys.exit(f"round {number}: the Celery worker did not consume every job in 15 minutes")
                time.sleep(0.2)

        postmaster = postmaster_pid(crowdqa_db)
        meters = {
            s: CpuMeter(m.pid, postmaster, celery.pid if s in crowdqa_systems else 0)
            for s, m in masters.items()
        }
        results: dict[str, list[dict[str, Any]]] = {s: [] for s in systems}
        for number in range(total_rounds):
            shift = number % len(systems)
            order = systems[shift:] + systems[:shift]  # each system takes each place in turn
            for system in order:
                result = run_round(
                    system,
                    number,
                    hosts[system],
                    work,
                    args,
                    meters[system],
                    partial(drain, system) if system in crowdqa_systems else None,
                )
                row = summary(result)
                label = "warm-up" if number == 0 else f"round {number}"
                print(
                    f"{label:>8} {system:>17}: page p50/p95 {row['page_p50']:.0f} / "
                    f"{row['page_p95']:.0f} ms, "
                    f"submit p50/p95 {row['submit_p50']:.0f} / {row['submit_p95']:.0f} ms, "
                    f"{claim_line(row) if args.claims else ''}"
                    f"{row['submit_n']} submits in {result['seconds']:.0f} s + "
                    f"{result['drain_seconds']:.1f} s "
                    f"drain ({row['hits_per_s']:.1f} completed HITs/s), {row['failed']} failed"
                    f"{'' if result['timed_out'] else ' (users ran out of HITs before the time)'}, "
                    f"load {result['load']:.1f}; CPU ms per HIT: "
                    + ", ".join(f"{k} {row[f'hit_cpu_{k}']:.1f}" for k in result["cpu"]),
                    flush=True,
                )
                if number:
                    results[system].append(result)
        after_memory = {s: server_memory(m.pid) for s, m in masters.items()}
        celery_rss = [rss_mb(celery.pid)] + [rss_mb(p) for p in children(celery.pid)]

        print()
        variant = (
            f", crowdqa-variant {crowdqa_web['crowdqa-variant']} with {' '.join(args.variant)}"
            if args.variant
            else ""
        )
        print(
            f"{args.users} users, {args.seconds:.0f} s rounds, "
            f"crowdqa {crowdqa_web['crowdqa']}{variant}, Turkle {args.web_workers} gunicorn sync workers, "
            f"crowdqa's Celery worker with {args.celery_workers} processes on the same machine, "
            f"PostgreSQL {parts.hostname}:{parts.port}, {args.rounds} counted rounds, order rotated"
        )
        print_results(results, args)
        print("web workers' memory, MB, at start -> after the load (each worker; whole server: PSS summed)")
        for system in systems:
            print(f"  {system}: " + describe_memory(start_memory[system], after_memory[system]))
        print("crowdqa Celery worker RSS after load: " + ", ".join(f"{v:.0f}" for v in celery_rss) + " MB")
        acknowledged = {
            s: {
                f"round-{setup_round.get(s, 0) + n}": len(r["times"].get("submit", []))
                for n, r in enumerate(results[s], start=1)
            }
            for s in systems
        }
        stored = {s: stored_crowdqa() for s in crowdqa_systems}
        for turkle, env in turkle_envs.items():
            stored[turkle] = json.loads(
                subprocess.run(
                    [str(args.turkle_python), str(ROOT / "benchmarks" / "load_turkle_setup.py"), "count"],
                    cwd=args.turkle,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
        for system in systems:
            counted = acknowledged[system]
            missing = {
                k: (v, stored[system].get(k, 0)) for k, v in counted.items() if stored[system].get(k, 0) < v
            }
            print(
                f"{system}: {sum(counted.values())} submissions acknowledged in counted rounds; "
                + ("every one stored" if not missing else f"NOT all stored (acknowledged, stored): {missing}")
            )
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average at the end: {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
