"""CPU per submission of the after-submission job, in process and through a real Celery worker.

The job (``crowd.followup_tasks.after_submission``) follows every stored submission: it completes the HIT
once every slot holds submitted work, runs the heuristic QC the page did not run, and grades a
screening quiz. This script measures what it costs, on PostgreSQL, with real SciQ question HITs:

1. Drops and re-creates the database ``crowdqa_jobs`` on ``DATABASE_URL``'s server and migrates it.
2. Publishes a SciQ stage-1 batch over real SciQ passages (three per HIT), gives each HIT its own local
   worker with consent, and submits every HIT's real question through the worker's page (Django's test
   client), keeping the queued follow-ups aside.
3. In process: runs the job's body for ``--submissions`` of them, one after the other, and prints the
   CPU of this process and of its PostgreSQL backend per submission, with the SQL statements.
   Then the same for another ``--submissions``, ``--per-run`` at a time, as the batched job does.
4. Through Celery, as deployed (a throw-away Redis as broker and shared cache, ``celery -A config
   worker``, prefork, ``--concurrency`` processes), twice: one job per submission
   (:func:`crowd.services.followups.queue_after_submission`, queued ``--rate`` per second the way the
   submit view does after each commit without Redis), then batched (beat inside the worker, ``-B``,
   whose dispatcher follows up every owed batch in one pass; the submissions' ``followed_up_at`` is
   cleared ``--rate`` per second, the way the submit view stores them). Each time it waits until every one of
   another ``--submissions`` has run (each HIT completed, the queue empty), and prints the CPU of the
   worker (its main process, its pool and, batched, beat) and of the PostgreSQL server per submission,
   the messages, the Redis commands, the wall time, the idle worker's CPU per second and the worker's
   resident memory.

``--modes`` picks the measurements (``celery-batched`` alone is the deployed path), ``--worker-arg``
adds options to the worker's command (``load_processes.celery_worker_command``) to compare them.

    DATABASE_URL=postgres://postgres@127.0.0.1:5447/x .venv/bin/python benchmarks/after_submission_cost.py \\
        --submissions 400
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from load_crowdqa_setup import sciq_items  # noqa: E402
from load_processes import (  # noqa: E402
    celery_worker_command,
    children,
    database_url,
    drop_databases,
    free_port,
    postmaster_pid,
    process_cpu,
    recreate_databases,
    rss_mb,
    start,
)

DATABASE = "crowdqa_jobs"
MODES = ("in-process", "in-process-batched", "celery", "celery-batched")


def submit_all(count: int, data: Path) -> list[int]:
    """Publish a SciQ question batch of ``count`` HITs and submit each through its page; the ids."""
    from django.test import Client, override_settings
    from django.utils import timezone

    from annotation.models import Assignment
    from annotation.platforms import Platform
    from annotation.services.batches import BatchSpec, create_batch
    from crowd.models import Consent, Worker, pseudonym_for
    from tests.factories import make_textbook
    from worker import hit_links

    items = sciq_items(data, count * 3)
    by_text = {p: (q, a) for p, q, a in items}
    corpus = make_textbook("jobs", (p for p, _, _ in items))
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=count))
    batch.publish()
    workers = Worker.objects.bulk_create(
        Worker(
            platform=Platform.LOCAL, platform_id=f"jobs-{i}", pseudonym=pseudonym_for("local", f"jobs-{i}")
        )
        for i in range(count)
    )
    Consent.objects.bulk_create(Consent(worker=w, batch=batch) for w in workers)
    hits = list(batch.hits.order_by("position").prefetch_related("passages"))
    expires = timezone.now() + timezone.timedelta(minutes=batch.time_limit_minutes)
    assignments = Assignment.objects.bulk_create(
        Assignment(hit=h, worker=w, expires_at=expires) for h, w in zip(hits, workers, strict=True)
    )
    queued: list[int] = []
    client = Client()
    # Each submission's follow-up as the page queues it without batching, kept aside here.
    with (
        override_settings(CROWDQA_FOLLOWUP_BATCHING=False),
        mock.patch("crowd.services.followups.queue_after_submission", lambda pk, **kw: queued.append(pk)),
    ):
        for hit, assignment in zip(hits, assignments, strict=True):
            passage = min(hit.passages.all(), key=lambda p: p.pk)
            question, answer = by_text[passage.text]
            response = client.post(
                hit_links.url_for(assignment),
                {"passage": str(passage.pk), "question": question, "answer": answer},
            )
            assert response.status_code == 200 and b"Thank you" in response.content, response.status_code
    assert len(queued) == count, (len(queued), count)
    return queued


def backend_cpu() -> float:
    """CPU seconds of this process's PostgreSQL backend so far."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    return process_cpu(pid)


def in_process(ids: list[int]) -> None:
    """Run the job's body for each id; print CPU (here and in PostgreSQL) and statements per submission."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crowd.followup_tasks import after_submission

    for pk in ids[:10]:  # the first runs import what the job uses
        after_submission.run(pk)
    ids = ids[10:]
    cpu, statements = [], []
    db0 = backend_cpu()
    for pk in ids:
        with CaptureQueriesContext(connection) as ctx:
            c0 = time.process_time()
            after_submission.run(pk)
            cpu.append((time.process_time() - c0) * 1000)
        statements.append(len(ctx.captured_queries))
    database = (backend_cpu() - db0) * 1000 / len(ids)
    print(
        f"in process, {len(ids)} submissions one by one: job CPU median {statistics.median(cpu):.2f} ms, "
        f"mean {statistics.mean(cpu):.2f} ms; PostgreSQL backend {database:.2f} ms per submission "
        f"(includes the statement capture's few reads); {statistics.median(statements):.0f} statements"
    )


def in_process_batched(ids: list[int], size: int) -> None:
    """Follow up ``ids`` ``size`` at a time, as one run of the batched job does; print CPU per submission."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from crowd.services.after_submission import follow_up

    follow_up(ids[:size])
    ids = ids[size:]
    db0 = backend_cpu()
    with CaptureQueriesContext(connection) as ctx:
        c0 = time.process_time()
        for i in range(0, len(ids), size):
            follow_up(ids[i : i + size])
        cpu = (time.process_time() - c0) * 1000 / len(ids)
    database = (backend_cpu() - db0) * 1000 / len(ids)
    print(
        f"in process, {len(ids)} submissions {size} per run: job CPU {cpu:.2f} ms, PostgreSQL backend "
        f"{database:.2f} ms per submission; {len(ctx.captured_queries) / len(ids):.2f} statements per "
        "submission"
    )


def redis_calls(client: object) -> int:
    """Commands the Redis server has run so far (``INFO commandstats``), every client counted."""
    stats = client.info("commandstats")  # type: ignore[attr-defined]
    return sum(int(v["calls"]) for v in stats.values())


def through_celery(
    ids: list[int],
    env: dict[str, str],
    work: Path,
    batched: bool,
    args: argparse.Namespace,
) -> None:
    """Queue the follow-ups of ``ids`` into a real worker, ``rate`` per second as the submit view does
    after each commit (batched: the batch's job, otherwise one job per submission), and measure the
    worker until every one has run (its main process and its pool apart, the Redis commands every
    client sent, and the worker's CPU while idle afterwards)."""
    from django.test.utils import override_settings
    from django.utils import timezone

    from annotation.models import HIT, Assignment
    from crowd.services.followups import queue_after_submission

    with ExitStack() as stack:
        stack.enter_context(override_settings(CROWDQA_FOLLOWUP_BATCHING=batched))
        concurrency, rate = args.concurrency, args.rate
        beat = work / "beat-schedule" if batched else None  # the dispatcher of batched follow-ups
        command = celery_worker_command(concurrency, beat_schedule=beat)
        worker = start(
            stack,
            command + args.worker_arg,
            ROOT,
            env,
            work / "celery.log",
        )
        from config.celery import app

        broker = app.connection_for_write(env["REDIS_URL"])
        hit_of = dict(Assignment.objects.filter(pk__in=ids).values_list("pk", "hit_id"))
        hit_ids = [hit_of[pk] for pk in ids]
        messages = [0]
        if batched:  # owed their follow-up only as the submit view stores them, ``rate`` per second
            Assignment.objects.filter(pk__in=ids).update(followed_up_at=timezone.now())

        def queue(pk: int) -> None:
            if batched:
                Assignment.objects.filter(pk=pk).update(submitted_at=timezone.now(), followed_up_at=None)
            else:
                queue_after_submission(pk, connection=broker)
                messages[0] += 1

        def queued() -> int:
            return int(broker.default_channel.client.llen("default"))

        def wait_done(pks: list[int], deadline: float) -> None:
            while time.monotonic() < deadline:
                open_hits = HIT.objects.filter(pk__in=pks, status=HIT.Status.OPEN).count()
                if not open_hits and not queued():
                    return
                time.sleep(0.05)
            log = (work / "celery.log").read_text(errors="replace")[-3000:]
            sys.exit(f"the worker did not finish in time; the end of its log:\n{log}")

        warm, measured = ids[:20], ids[20:]
        warm_hits = hit_ids[:20]
        ready = time.monotonic() + 120
        while not broker.default_channel.client.exists("_kombu.binding.default"):  # the worker's queue
            if time.monotonic() > ready or worker.poll() is not None:
                sys.exit("the worker did not start: " + (work / "celery.log").read_text(errors="replace"))
            time.sleep(0.2)
        for pk in warm:
            queue(pk)
        wait_done(warm_hits, time.monotonic() + 120)
        time.sleep(1)
        postmaster = postmaster_pid(env["DATABASE_URL"])

        client = broker.default_channel.client

        def snapshot() -> tuple[float, float, float, float, int]:
            pool = children(worker.pid)
            # The server's CPU less this process's backend (batched, its UPDATEs stand in for the submits).
            return (
                process_cpu(worker.pid, waited_children=True),
                sum(process_cpu(p) for p in pool),
                process_cpu(postmaster, waited_children=True)
                + sum(process_cpu(p) for p in children(postmaster))
                - backend_cpu(),
                time.monotonic(),
                redis_calls(client),
            )

        before = snapshot()
        messages[0] = 0
        t0 = time.monotonic()
        for i, pk in enumerate(measured):
            time.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            queue(pk)
        wait_done(hit_ids[20:], time.monotonic() + 1800)
        after = snapshot()
        time.sleep(args.idle)
        idle = snapshot()
        n = len(measured)
        rss = [rss_mb(worker.pid)] + [rss_mb(p) for p in children(worker.pid)]
        mode = "batched (looks from beat, -B)" if batched else "one job per submission"
        main_ms, pool_ms = ((after[i] - before[i]) * 1000 / n for i in (0, 1))
        idle_ms = sum(idle[i] - after[i] for i in (0, 1)) * 1000 / args.idle
        flags = " ".join(command[command.index("celery") + 1 :] + args.worker_arg)
        print(
            f"through Celery ({flags}; Redis "
            f"broker), {mode}, {n} submissions queued {rate:.0f}/s, {messages[0]} messages sent here: worker "
            f"CPU {main_ms + pool_ms:.2f} ms (main process {main_ms:.2f}, pool {pool_ms:.2f}), PostgreSQL "
            f"(whole server less this script's session) {(after[2] - before[2]) * 1000 / n:.2f} ms per "
            "submission; Redis commands "
            f"(every client) {(after[4] - before[4]) / n:.1f} per submission; "
            f"{n / (after[3] - before[3]):.0f} submissions/s wall; idle worker {idle_ms:.1f} ms CPU per "
            "second; worker RSS " + ", ".join(f"{v:.0f}" for v in rss) + " MB (main, pool)"
        )
        broker.release()
        worker.terminate()
        worker.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--submissions", type=int, default=400, help="per measurement")
    parser.add_argument("--concurrency", type=int, default=2, help="Celery pool processes")
    parser.add_argument("--rate", type=float, default=50.0, help="submissions per second queued")
    parser.add_argument("--per-run", type=int, default=25, help="submissions per run, in process")
    parser.add_argument("--data", type=Path, default=None, help="SciQ folder (default: shared data)")
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma-separated measurements to run, of {', '.join(MODES)}",
    )
    parser.add_argument(
        "--worker-arg",
        action="append",
        default=[],
        help="an extra argument for the Celery worker (repeat), to compare its options",
    )
    parser.add_argument("--idle", type=float, default=5.0, help="seconds the idle worker is measured")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres") or urlsplit(base).hostname not in ("127.0.0.1", "localhost"):
        sys.exit("set DATABASE_URL to a PostgreSQL server on this machine (its database name is not used)")
    url = database_url(base, DATABASE)
    with tempfile.TemporaryDirectory(prefix="crowdqa-jobs-") as tmp, ExitStack() as stack:
        work = Path(tmp)
        redis_port = free_port()
        start(
            stack,
            ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""],
            work,
            dict(os.environ),
            work / "redis.log",
        )
        env = {
            "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
            "DJANGO_DEBUG": "0",
            "CROWDQA_VAR_DIR": str(work / "var"),
            "CROWDQA_DEMO": "0",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        recreate_databases(base, [DATABASE])
        stack.callback(drop_databases, base, [DATABASE])
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        os.environ.update(env)
        import django

        django.setup()
        from django.test.utils import setup_test_environment

        from config.shared_data import shared_data_dir

        setup_test_environment()  # the test client's host and a locmem mailbox
        n = args.submissions
        modes = [m for m in args.modes.split(",") if m]
        unknown = set(modes) - set(MODES)
        if unknown:
            sys.exit(f"unknown modes {sorted(unknown)}; choose from {', '.join(MODES)}")
        sizes = {"in-process": n + 10, "in-process-batched": n + args.per_run}
        sizes.update({"celery": n + 20, "celery-batched": n + 20})
        ids = submit_all(sum(sizes[m] for m in modes), args.data or shared_data_dir() / "sciq")
        for mode in modes:
            chunk, ids = ids[: sizes[mode]], ids[sizes[mode] :]
            if mode == "in-process":
                in_process(chunk)
            elif mode == "in-process-batched":
                in_process_batched(chunk, args.per_run)
            else:
                through_celery(chunk, env, work, batched=mode == "celery-batched", args=args)
        from django.db import connections

        connections.close_all()


if __name__ == "__main__":
    main()
