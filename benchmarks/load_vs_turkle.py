"""crowdqa and Turkle 3.1.0 under the same load, side by side: HIT page and submit latency, worker RSS.

Both systems serve the same SciQ question HITs (three real ~80-word SciQ passages, a choice among them,
a question and its answer) from their own PostgreSQL database on the same server, each with 4 gunicorn
sync workers bound to 127.0.0.1 with DEBUG off; crowdqa queues its after-submission job in a throw-away
Redis, as in production. Every virtual user (locust, ``benchmarks/load_users.py``) is a worker holding
claimed HITs: it opens a HIT's page, submits the passage's real SciQ question and answer, and goes on to
its next HIT without pause. Rounds are bounded (``--hits`` HITs per user, ``--seconds`` at most) and
alternate between the systems (crowdqa first in odd rounds, Turkle first in even ones), after one
warm-up round each that is not counted. Per round the script prints p50/p95 of the page and the submit
for each system and the crowdqa/Turkle ratios, with the CPU each HTTP request cost the system's web
workers, the PostgreSQL server, the load generator and the whole machine (``/proc``, :class:`CpuMeter`);
then the median of the per-round ratios and CPU figures, the resident memory of every web worker after
the load, the load average, and whether every acknowledged submission is stored.

"Page" is what a worker waits for before seeing the HIT: crowdqa's signed link (one request); Turkle's
assignment page plus the iframe that holds the task form (two requests; Turkle's first request alone is
printed too). "Submit" is the POST alone (Turkle answers with a redirect, which is not followed).

Preparing Turkle (never vendored into this repository), e.g. under /tmp::

    # the Turkle 3.1.0 source (git tag 3.1.0 of github.com/hltcoe/turkle), unpacked in /tmp/turkle
    git clone --branch 3.1.0 --depth 1 https://github.com/hltcoe/turkle /tmp/turkle
    python3 -m venv /tmp/turkle-venv
    /tmp/turkle-venv/bin/pip install -r /tmp/turkle/requirements.txt gunicorn "psycopg[binary]"

Then (PostgreSQL from ``DATABASE_URL``'s server; the databases ``crowdqa_load`` and ``turkle_load`` are
dropped and re-created)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_load .venv/bin/python \\
        benchmarks/load_vs_turkle.py --turkle /tmp/turkle --turkle-python /tmp/turkle-venv/bin/python \\
        --users 50 --rounds 6
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

SYSTEMS = ("crowdqa", "turkle")
TURKLE_SETTINGS = """
from turkle_site.settings import *  # noqa: F401,F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
DATABASES = {{"default": {{"ENGINE": "django.db.backends.postgresql", "NAME": {name!r}, "USER": {user!r},
              "PASSWORD": {password!r}, "HOST": {host!r}, "PORT": {port!r}}}}}
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


def sciq_items(root: Path, needed: int) -> list[tuple[str, str, str]]:
    """(passage, question, answer) of real SciQ items with 60-100-word passages that pass SciQ QC."""
    from annotation.hits.sciq_question import QC_OPTIONS
    from annotation.importers.mcq import read_sciq
    from filters.qc_common import ERROR
    from filters.qc_sciq import SciQItem, check_item

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
    if len(items) < needed:
        sys.exit(f"only {len(items)} usable SciQ passages, {needed} needed: lower --users or --hits")
    return list(items.values())[:needed]


def setup_crowdqa(rounds: int, users: int, hits: int, items: list[tuple[str, str, str]], out: Path) -> list:
    """crowdqa's HITs, workers and claims for every round; returns the HIT contents per round and user.

    One corpus and one published local batch per round (a passage is used once per corpus). Each HIT is
    held by its own worker (a local worker holds one HIT per batch), with consent given; the assignment
    rows are the ones a claim creates (``assigning.claim_next``), written in bulk.
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
    for number in range(rounds):
        corpus = make_textbook(f"load-{number}", (text for text, _, _ in items))
        batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=users * hits))
        batch.publish()
        workers = Worker.objects.bulk_create(
            Worker(
                platform=Platform.LOCAL,
                platform_id=f"load-{number}-{i}",
                pseudonym=pseudonym_for("local", f"load-{number}-{i}"),
            )
            for i in range(users * hits)
        )
        Consent.objects.bulk_create(Consent(worker=w, batch=batch) for w in workers)
        expires = timezone.now() + timedelta(minutes=batch.time_limit_minutes)
        held = list(batch.hits.order_by("position").prefetch_related("passages"))
        assignments = Assignment.objects.bulk_create(
            Assignment(hit=h, worker=w, expires_at=expires) for h, w in zip(held, workers, strict=True)
        )
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
    from annotation.models import QAPair

    return {
        f"round-{n.removeprefix('load-')}": c
        for n, c in (
            (name, QAPair.objects.filter(corpus__name=name).count())
            for name in sorted(set(QAPair.objects.values_list("corpus__name", flat=True)))
        )
    }


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

    def __init__(self, web_master: int, postmaster: int) -> None:
        self.web_master, self.postmaster = web_master, postmaster

    def snapshot(self) -> dict[str, float]:
        generator = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "web": sum(process_cpu(p) for p in children(self.web_master)),
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
    system: str, number: int, host: str, work: Path, args: argparse.Namespace, meter: CpuMeter
) -> dict[str, Any]:
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
    after = meter.snapshot()
    result = json.loads(out.read_text())
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
    # "page" is the whole page wait; where it took two requests, "page1" and "page2" count them
    requests = sum(len(v) for k, v in times.items() if not (k == "page" and "page1" in times))
    row["requests_per_s"] = requests / result["seconds"]
    for part, seconds in result.get("cpu", {}).items():
        row[f"cpu_{part}"] = seconds * 1000 / max(requests, 1)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turkle", type=Path, required=True, help="Turkle 3.1.0 source checkout")
    parser.add_argument("--turkle-python", type=Path, required=True, help="python of Turkle's virtualenv")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--hits", type=int, default=20, help="HITs each virtual user submits per round")
    parser.add_argument("--seconds", type=float, default=90.0, help="longest round")
    parser.add_argument("--wait", type=float, default=0.0, help="think time between requests, seconds")
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--data", type=Path, default=None, help="SciQ folder (default: shared data)")
    parser.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    args = parser.parse_args()

    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        sys.exit("set DATABASE_URL to a PostgreSQL URL (its server is used; its database name is not)")
    parts = urlsplit(base)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit("the benchmark runs against a PostgreSQL server on this machine only")
    names = ["crowdqa_load", "turkle_load"]
    crowdqa_db = database_url(base, names[0])
    os.environ["DATABASE_URL"] = crowdqa_db
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.shared_data import shared_data_dir

    data = args.data or shared_data_dir() / "sciq"
    total_rounds = args.rounds + 1  # round 0 warms both servers up and is not counted

    with tempfile.TemporaryDirectory(prefix="crowdqa-load-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        recreate_databases(base, names)
        if not args.keep:
            stack.callback(drop_databases, base, names)
        var = work / "var"
        crowdqa_env = {
            **os.environ,
            "DATABASE_URL": crowdqa_db,
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_DEBUG": "0",
            "CROWDQA_VAR_DIR": str(var),
            "CROWDQA_DEMO": "0",
        }
        (work / "load_turkle_settings.py").write_text(
            TURKLE_SETTINGS.format(
                name=names[1],
                user=parts.username or "postgres",
                password=parts.password or "",
                host=parts.hostname,
                port=str(parts.port or 5432),
            )
        )
        turkle_env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": f"{work}:{args.turkle}",
            "DJANGO_SETTINGS_MODULE": "load_turkle_settings",
        }
        print("migrating both databases ...", flush=True)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=crowdqa_env, check=True)
        subprocess.run(
            [str(args.turkle_python), "manage.py", "migrate", "-v0"],
            cwd=args.turkle,
            env=turkle_env,
            check=True,
        )
        os.environ.update(crowdqa_env)
        import django

        django.setup()
        items = sciq_items(data, args.users * args.hits * 3)
        words = statistics.mean(len(p.split()) for p, _, _ in items)
        print(
            f"creating HITs and claims: {len(items)} SciQ passages ({words:.0f} words on average) ...",
            flush=True,
        )
        contents = setup_crowdqa(total_rounds, args.users, args.hits, items, work)
        (work / "hits.json").write_text(json.dumps({"rounds": contents}))
        subprocess.run(
            [str(args.turkle_python), str(ROOT / "benchmarks" / "load_turkle_setup.py"), "setup"]
            + [str(work / "hits.json"), str(work)],
            cwd=args.turkle,
            env=turkle_env,
            check=True,
        )

        redis_port = free_port()
        start(
            stack,
            [
                "redis-server",
                "--port",
                str(redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            work,
            dict(os.environ),
            work / "redis.log",
        )
        crowdqa_env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        ports = {"crowdqa": free_port(), "turkle": free_port()}
        masters = {
            "crowdqa": start(
                stack,
                [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py"]
                + ["-b", f"127.0.0.1:{ports['crowdqa']}", "-w", str(args.web_workers)],
                ROOT,
                crowdqa_env,
                work / "crowdqa.log",
            ),
            "turkle": start(
                stack,
                [str(args.turkle_python), "-m", "gunicorn", "turkle_site.wsgi:application"]
                + ["-b", f"127.0.0.1:{ports['turkle']}", "-w", str(args.web_workers)],
                args.turkle,
                turkle_env,
                work / "turkle.log",
            ),
        }
        hosts = {s: f"http://127.0.0.1:{p}" for s, p in ports.items()}
        wait_ready(hosts["crowdqa"] + "/health/")
        wait_ready(hosts["turkle"] + "/login/")
        time.sleep(2)
        start_rss = {s: [rss_mb(p) for p in children(m.pid)] for s, m in masters.items()}

        postmaster = postmaster_pid(crowdqa_db)
        meters = {s: CpuMeter(m.pid, postmaster) for s, m in masters.items()}
        results: dict[str, list[dict[str, Any]]] = {s: [] for s in SYSTEMS}
        for number in range(total_rounds):
            order = SYSTEMS if number % 2 else SYSTEMS[::-1]
            for system in order:
                result = run_round(system, number, hosts[system], work, args, meters[system])
                row = summary(result)
                label = "warm-up" if number == 0 else f"round {number}"
                print(
                    f"{label:>8} {system:>7}: page p50/p95 {row['page_p50']:.0f} / {row['page_p95']:.0f} ms, "
                    f"submit p50/p95 {row['submit_p50']:.0f} / {row['submit_p95']:.0f} ms, "
                    f"{row['submit_n']} submits ({row['submits_per_s']:.1f}/s, "
                    f"{row['requests_per_s']:.1f} requests/s), "
                    f"{row['failed']} failed, {result['seconds']:.0f} s"
                    f"{' (time limit hit)' if result['timed_out'] else ''}, load {result['load']:.1f}; "
                    "CPU ms per request: " + ", ".join(f"{k} {row[f'cpu_{k}']:.1f}" for k in result["cpu"]),
                    flush=True,
                )
                if number:
                    results[system].append(result)
        after_rss = {s: [rss_mb(p) for p in children(m.pid)] for s, m in masters.items()}

        print()
        print(
            f"{args.users} users, {args.hits} HITs each per round, {args.web_workers} gunicorn sync workers, "
            f"PostgreSQL {parts.hostname}:{parts.port}, {args.rounds} counted rounds"
        )
        print(
            "| round | crowdqa page p50 / p95 | Turkle page p50 / p95 | crowdqa submit p50 / p95 | "
            "Turkle submit p50 / p95 | ratio page p95 | ratio submit p50 / p95 | "
            "submits/s crowdqa / Turkle | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        keys = ("page_p50", "page_p95", "submit_p50", "submit_p95", "page1_p50", "page1_p95", "submits_per_s")
        ratios: dict[str, list[float]] = {k: [] for k in keys}
        for number, (c, t) in enumerate(zip(results["crowdqa"], results["turkle"], strict=True), start=1):
            cs, ts = summary(c), summary(t)
            for key in ratios:
                ratios[key].append(cs[key] / ts[key])
            print(
                f"| {number} | {cs['page_p50']:.0f} / {cs['page_p95']:.0f} | {ts['page_p50']:.0f} / "
                f"{ts['page_p95']:.0f} | {cs['submit_p50']:.0f} / {cs['submit_p95']:.0f} | "
                f"{ts['submit_p50']:.0f} / {ts['submit_p95']:.0f} | {cs['page_p95'] / ts['page_p95']:.2f} | "
                f"{cs['submit_p50'] / ts['submit_p50']:.2f} / {cs['submit_p95'] / ts['submit_p95']:.2f} | "
                f"{cs['submits_per_s']:.1f} / {ts['submits_per_s']:.1f} | {c['load']:.1f} / {t['load']:.1f} |"
            )
        print(
            "median of the per-round ratios crowdqa / Turkle (target: p95 at most 0.50; page1: against "
            "Turkle's first page request alone, without its task iframe; submits_per_s: higher is faster):"
        )
        for key, values in ratios.items():
            print(f"  {key}: {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f})")
        print("CPU ms per HTTP request, median over the counted rounds (crowdqa / Turkle):")
        for part in results["crowdqa"][0]["cpu"]:
            medians = [statistics.median(summary(r)[f"cpu_{part}"] for r in results[s]) for s in SYSTEMS]
            print(f"  {part}: {medians[0]:.1f} / {medians[1]:.1f}")
        for system in SYSTEMS:
            print(
                f"{system} web workers RSS: at start "
                + ", ".join(f"{v:.0f}" for v in start_rss[system])
                + " MB; after load "
                + ", ".join(f"{v:.0f}" for v in after_rss[system])
                + " MB"
            )
        acknowledged = {
            s: {f"round-{n}": len(r["times"].get("submit", [])) for n, r in enumerate(results[s], start=1)}
            for s in SYSTEMS
        }
        stored_c = stored_crowdqa()
        stored_t = json.loads(
            subprocess.run(
                [str(args.turkle_python), str(ROOT / "benchmarks" / "load_turkle_setup.py"), "count"],
                cwd=args.turkle,
                env=turkle_env,
                check=True,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for system, stored in (("crowdqa", stored_c), ("turkle", stored_t)):
            counted = acknowledged[system]
            missing = {k: (v, stored.get(k, 0)) for k, v in counted.items() if stored.get(k, 0) < v}
            print(
                f"{system}: {sum(acknowledged[system].values())} submissions acknowledged in counted rounds; "
                + ("every one stored" if not missing else f"NOT all stored (acknowledged, stored): {missing}")
            )
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average at the end: {load} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
