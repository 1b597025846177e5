"""crowdqa and Turkle 3.1.0 under the same load, side by side: HIT page and submit latency, completed HITs
per second and the CPU each completed HIT cost, with crowdqa measured as deployed.

Three systems serve the same SciQ question HITs (three real ~80-word SciQ passages, a choice among them,
a question and its answer), each from its own PostgreSQL database on the same server, each with 4
gunicorn sync workers bound to 127.0.0.1 with DEBUG off: crowdqa with its Celery worker on the same
machine (Redis broker) consuming every after-submission job; Turkle with Django's default
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
resident memory of the web and Celery workers after the load, and whether every acknowledged
submission is stored.

"Page" is what a worker waits for before seeing the HIT: crowdqa's signed link (one request); Turkle's
assignment page plus the iframe that holds the task form (two requests; Turkle's first request alone is
``page1``). "Submit" is the POST alone (Turkle answers with a redirect, which is not followed).

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
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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


def sciq_items(root: Path, needed: int, at_least: int = 0) -> list[tuple[str, str, str]]:
    """(passage, question, answer) of real SciQ items with 60-100-word passages that pass SciQ QC.

    At most ``needed``; fewer are enough when at least ``at_least`` exist (a round then reuses them in
    several corpora).
    """
    from annotation.hits.sciq_question import QC_OPTIONS
    from annotation.importers.mcq import read_sciq
    from annotation.qc.common import ERROR
    from annotation.qc.sciq import SciQItem, check_item

    items: dict[str, tuple[str, str, str]] = {}
    for record in read_sciq(root):
        passage = " ".join(record.passage.split())
        if passage in items or not 60 <= len(passage.split()) <= 100:
            continue
        qc = check_item(
            SciQItem(id="x", question=record.question, answer=record.answer, passage=passage), QC_OPTIONS
        )
        if any(issue.severity == ERROR for issue in qc.issues):
            continue
        items[passage] = (passage, record.question.strip(), record.answer.strip())
    if len(items) < max(at_least, min(needed, 3)):
        sys.exit(f"only {len(items)} usable SciQ passages, {at_least or needed} needed: lower --users")
    return list(items.values())[:needed]


def setup_crowdqa(rounds: int, users: int, hits: int, items: list[tuple[str, str, str]], out: Path) -> list:
    """crowdqa's HITs, workers and claims for every round; returns the HIT contents per round and user.

    One published local batch per corpus, as many corpora per round as the HITs need (a passage is
    used once per corpus; the corpora ``load-<round>-<chunk>`` reuse the same passages). Each HIT is held
    by its own worker (a local worker holds one HIT per batch), with consent given; the assignment rows
    are the ones a claim creates (``assigning.claim_next``), written in bulk.
    """
    import django

    django.setup()
    from django.utils import timezone

    from annotation.models import Assignment
    from annotation.platforms import Platform
    from annotation.services.batches import BatchSpec, create_batch
    from crowd.models import Consent, Worker, pseudonym_for
    from tests.factories import make_textbook
    from worker import hit_links

    by_text = {p: (q, a) for p, q, a in items}
    contents = []
    per_corpus = len(items) // 3
    for number in range(rounds):
        held: list = []
        assignments: list = []
        chunk = 0
        while len(held) < users * hits:
            corpus = make_textbook(f"load-{number}-{chunk}", (text for text, _, _ in items))
            limit = min(per_corpus, users * hits - len(held))
            batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=limit))
            batch.publish()
            workers = Worker.objects.bulk_create(
                Worker(
                    platform=Platform.LOCAL,
                    platform_id=f"load-{number}-{chunk}-{i}",
                    pseudonym=pseudonym_for("local", f"load-{number}-{chunk}-{i}"),
                )
                for i in range(limit)
            )
            Consent.objects.bulk_create(Consent(worker=w, batch=batch) for w in workers)
            expires = timezone.now() + timedelta(minutes=batch.time_limit_minutes)
            hits_now = list(batch.hits.order_by("position").prefetch_related("passages"))
            held += hits_now
            assignments += Assignment.objects.bulk_create(
                Assignment(hit=h, worker=w, expires_at=expires)
                for h, w in zip(hits_now, workers, strict=True)
            )
            chunk += 1
        plan_users, round_contents = [], []
        for u in range(users):
            queue, shown = [], []
            mine = slice(u * hits, (u + 1) * hits)
            for hit, assignment in zip(held[mine], assignments[mine], strict=True):
                passages = sorted(hit.passages.all(), key=lambda p: p.pk)
                question, answer = by_text[passages[0].text]
                url = hit_links.url_for(assignment)
                queue.append(
                    {
                        "page": [url],
                        "submit": url,
                        "form": {"passage": str(passages[0].pk), "question": question, "answer": answer},
                        "accept_status": [200],
                        "accept_text": "Thank you",
                    }
                )
                shown.append({"passages": [p.text for p in passages], "question": question, "answer": answer})
            plan_users.append(queue)
            round_contents.append(shown)
        (out / f"crowdqa-{number}.json").write_text(json.dumps({"users": plan_users}))
        contents.append(round_contents)
    return contents


def stored_crowdqa() -> dict[str, int]:
    from django.db.models import Count

    from annotation.models import QAPair

    stored: dict[str, int] = {}
    for name, count in QAPair.objects.order_by().values_list("corpus__name").annotate(n=Count("pk")):
        key = f"round-{name.split('-')[1]}"
        stored[key] = stored.get(key, 0) + count
    return stored


def owed_followups(number: int) -> int:
    """Submissions of crowdqa's round ``number`` whose after-submission job has not run yet."""
    from annotation.models import Assignment

    return Assignment.objects.filter(
        hit__batch__corpus__name__startswith=f"load-{number}-",
        submitted_at__isnull=False,
        followed_up_at__isnull=True,
    ).count()


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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
    for name in ("page", "submit", "page1"):
        values = times.get(name, times.get("page", []) if name == "page1" else [])
        row[f"{name}_p50"] = percentile(values, 50)
        row[f"{name}_p95"] = percentile(values, 95)
        row[f"{name}_n"] = len(values)
    row["failed"] = sum(sum(c.values()) for c in result["failures"].values())
    row["submits_per_s"] = row["submit_n"] / result["seconds"]
    # completed HITs per second with every after-submission job consumed (crowdqa's drain counted)
    row["hits_per_s"] = row["submit_n"] / (result["seconds"] + result.get("drain_seconds", 0.0))
    # "page" is the whole page wait; where it took two requests, "page1" and "page2" count them
    requests = sum(len(v) for k, v in times.items() if not (k == "page" and "page1" in times))
    row["requests_per_s"] = requests / result["seconds"]
    for part, seconds in result.get("cpu", {}).items():
        row[f"cpu_{part}"] = seconds * 1000 / max(requests, 1)
        row[f"hit_cpu_{part}"] = seconds * 1000 / max(row["submit_n"], 1)
    cpu = result.get("cpu", {})
    row["hit_cpu_counted"] = sum(cpu.get(k, 0.0) for k in COUNTED) * 1000 / max(row["submit_n"], 1)
    return row


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
    """crowdqa's Celery worker, as deployed beside the web workers; returns once it consumes its queue."""
    import redis

    worker = start(
        stack,
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", "default", "-P", "prefork"]
        + ["-c", str(concurrency), "--without-mingle", "--without-gossip", "-l", "warning"],
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


def print_results(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """Per-round figures of each system, then the paired ratios against each Turkle."""
    print(
        "| round | system | page p50 / p95 ms | submit p50 / p95 ms | HITs | round s + drain s | "
        "completed HITs/s | CPU ms per HIT web / celery / database (counted) | load |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for number in range(len(results["crowdqa"])):
        for system in SYSTEMS:
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
    print(
        "paired ratios crowdqa / Turkle, median over rounds (range); targets with persistent connections: "
        "page p95 <= 0.3, submit p95 <= 0.5, completed HITs/s >= 2.5, CPU per completed HIT (web + Celery + "
        "database) <= 0.5"
    )
    for turkle in TURKLES:
        print(f"  against {turkle}:")
        for key in keys:
            values = [
                summary(c)[key] / summary(t)[key]
                for c, t in zip(results["crowdqa"], results[turkle], strict=True)
            ]
            print(f"    {key}: {statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
    print("CPU ms per completed HIT, median over the counted rounds:")
    for system in SYSTEMS:
        parts = ("web", "celery", "database", "load generator", "machine")
        medians = {k: statistics.median(summary(r)[f"hit_cpu_{k}"] for r in results[system]) for k in parts}
        print(f"  {system}: " + ", ".join(f"{k} {v:.1f}" for k, v in medians.items()))


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
    parser.add_argument("--wait", type=float, default=0.0, help="think time between requests, seconds")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--celery-workers", type=int, default=2, help="crowdqa's Celery pool processes")
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
            f"creating {args.users * args.hits} HITs and claims per round and system: {len(items)} SciQ "
            f"passages ({words:.0f} words on average) ...",
            flush=True,
        )
        contents = setup_crowdqa(total_rounds, args.users, args.hits, items, work)
        (work / "hits.json").write_text(json.dumps({"rounds": contents}))
        for turkle, env in turkle_envs.items():
            out = work / turkle
            out.mkdir()
            subprocess.run(
                [str(args.turkle_python), str(ROOT / "benchmarks" / "load_turkle_setup.py"), "setup"]
                + [str(work / "hits.json"), str(out)],
                cwd=args.turkle,
                env=env,
                check=True,
            )
            for number in range(total_rounds):
                (out / f"turkle-{number}.json").rename(work / f"{turkle}-{number}.json")

        redis_port = free_port()
        start(
            stack,
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no"],
            work,
            dict(os.environ),
            work / "redis.log",
        )
        crowdqa_env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        celery = start_celery(stack, crowdqa_env, work, args.celery_workers)
        ports = {s: free_port() for s in SYSTEMS}
        masters = {
            "crowdqa": start(
                stack,
                [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py"]
                + ["-b", f"127.0.0.1:{ports['crowdqa']}", "-w", str(args.web_workers)],
                ROOT,
                crowdqa_env,
                work / "crowdqa.log",
            ),
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
        wait_ready(hosts["crowdqa"] + "/health/")
        for turkle in TURKLES:
            wait_ready(hosts[turkle] + "/login/")
        time.sleep(2)
        start_rss = {s: [rss_mb(p) for p in children(m.pid)] for s, m in masters.items()}

        def drain(number: int) -> None:
            deadline = time.monotonic() + 900
            while owed_followups(number):
                if time.monotonic() > deadline:
                    sys.exit(f"round {number}: the Celery worker did not consume every job in 15 minutes")
                time.sleep(0.2)

        postmaster = postmaster_pid(crowdqa_db)
        meters = {
            s: CpuMeter(m.pid, postmaster, celery.pid if s == "crowdqa" else 0) for s, m in masters.items()
        }
        results: dict[str, list[dict[str, Any]]] = {s: [] for s in SYSTEMS}
        for number in range(total_rounds):
            shift = number % len(SYSTEMS)
            order = SYSTEMS[shift:] + SYSTEMS[:shift]  # each system takes each place in turn
            for system in order:
                result = run_round(
                    system,
                    number,
                    hosts[system],
                    work,
                    args,
                    meters[system],
                    drain if system == "crowdqa" else None,
                )
                row = summary(result)
                label = "warm-up" if number == 0 else f"round {number}"
                print(
                    f"{label:>8} {system:>17}: page p50/p95 {row['page_p50']:.0f} / "
                    f"{row['page_p95']:.0f} ms, "
                    f"submit p50/p95 {row['submit_p50']:.0f} / {row['submit_p95']:.0f} ms, "
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
        after_rss = {s: [rss_mb(p) for p in children(m.pid)] for s, m in masters.items()}
        celery_rss = [rss_mb(celery.pid)] + [rss_mb(p) for p in children(celery.pid)]

        print()
        print(
            f"{args.users} users, {args.seconds:.0f} s rounds, "
            f"{args.web_workers} gunicorn sync workers each, "
            f"crowdqa's Celery worker with {args.celery_workers} processes on the same machine, "
            f"PostgreSQL {parts.hostname}:{parts.port}, {args.rounds} counted rounds, order rotated"
        )
        print_results(results, args)
        for system in SYSTEMS:
            print(
                f"{system} web workers RSS: at start "
                + ", ".join(f"{v:.0f}" for v in start_rss[system])
                + " MB; after load "
                + ", ".join(f"{v:.0f}" for v in after_rss[system])
                + " MB"
            )
        print("crowdqa Celery worker RSS after load: " + ", ".join(f"{v:.0f}" for v in celery_rss) + " MB")
        acknowledged = {
            s: {f"round-{n}": len(r["times"].get("submit", [])) for n, r in enumerate(results[s], start=1)}
            for s in SYSTEMS
        }
        stored = {"crowdqa": stored_crowdqa()}
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
        for system in SYSTEMS:
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
