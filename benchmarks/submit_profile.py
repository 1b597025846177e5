"""Profile the SciQ question HIT's page and submit requests in one process: SQL queries, CPU and wall ms.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite when unset), loads real
SciQ validation passages from the shared data, publishes a stage-1 batch (three passages per HIT) and
has ``--workers`` distinct workers each claim a HIT, open its page and submit the real SciQ question of
their first passage, with what the page adds to its form (``load_crowdqa_setup.page_form``), through
Django's test client. Prints medians per request and, with ``--show-sql``, the statements of one submit
grouped by table, so the request's transaction can be read.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/submit_profile.py --workers 30 --show-sql

With ``--wsgi`` each worker, signed in as after an invite, claims its HIT (the POST of "next HIT" on
``/work/``), then opens the HIT's page and submits it, all through ``config.wsgi.application`` as gunicorn
calls it (a WSGI environ as locust's requests give it, every middleware of ``settings.MIDDLEWARE``, DEBUG
as configured, no test instrumentation, the response iterated and closed): the CPU of this process per
request, the statements the server received (counted with ``execute_wrapper`` plus the transaction's
BEGIN/COMMIT), and on a local PostgreSQL the CPU of the connection's server process
(``/proc/<pid>/schedstat``) and the WAL the server wrote meanwhile (``pg_current_wal_insert_lsn()``, read
from a second session). ``--profile N`` adds cProfile's top N functions by own time and by cumulative
time, for the claim, the page and the submit apart::

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/submit_profile.py --wsgi --workers 200 --profile 25
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import io
import os
import pstats
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402
from load_crowdqa_setup import CSRF_SECRET, page_form, session_cookie, signed_in_workers  # noqa: E402

from annotation.hits.sciq_question import QC_OPTIONS  # noqa: E402
from annotation.importers.mcq import read_sciq  # noqa: E402
from annotation.models import Assignment, Corpus, Passage, sha256_text  # noqa: E402
from annotation.qc.common import ERROR  # noqa: E402
from annotation.qc.sciq import SciQItem, check_item  # noqa: E402
from annotation.services.batches import BatchSpec, create_batch  # noqa: E402
from config.shared_data import shared_data_dir  # noqa: E402
from crowd.models import Consent, Worker  # noqa: E402
from worker import hit_links  # noqa: E402
from worker.assigning import claim_next  # noqa: E402


def _passes_hit_qc(passage: str, question: str, answer: str) -> bool:
    """True when the HIT page would accept this question (no QC error), so every submit is stored."""
    qc = check_item(SciQItem(id="x", question=question, answer=answer, passage=passage), QC_OPTIONS)
    return not any(issue.severity == ERROR for issue in qc.issues)


def load(root: Path, count: int) -> dict[str, tuple[str, str]]:
    """Accepted SciQ passages of 25-110 words whose question the HIT accepts: text -> (question, answer)."""
    corpus = Corpus.objects.create(name="sciq", kind=Corpus.Kind.TEXTBOOK)
    chosen: dict[str, tuple[str, str]] = {}
    for record in read_sciq(root, splits=("val",)):
        if (
            25 <= len(record.passage.split()) <= 110
            and record.passage not in chosen
            and _passes_hit_qc(record.passage, record.question, record.answer)
        ):
            chosen[record.passage] = (record.question, record.answer)
        if len(chosen) == count:
            break
    if len(chosen) < count:
        raise SystemExit(
            f"SciQ's validation split has {len(chosen)} passages this profile can use; {count} are needed "
            f"(--workers at most {(len(chosen) - 3) // 3})"
        )
    Passage.objects.bulk_create(
        Passage(
            corpus=corpus,
            position=i,
            text=text,
            text_sha256=sha256_text(text),
            filter_status=Passage.FilterStatus.ACCEPTED,
        )
        for i, text in enumerate(chosen)
    )
    return chosen


def timed(call):  # type: ignore[no-untyped-def]
    """Run ``call`` and return (result, CPU ms, wall ms, SQL statements)."""
    with CaptureQueriesContext(connection) as ctx:
        c0, w0 = time.process_time(), time.perf_counter()
        result = call()
        cpu, wall = (time.process_time() - c0) * 1000, (time.perf_counter() - w0) * 1000
    return result, cpu, wall, [q["sql"] for q in ctx.captured_queries]


def table_of(sql: str) -> str:
    """The verb and main table of a statement, for a readable summary."""
    verb = sql.split(None, 1)[0]
    while True:  # drop parenthesised parts, innermost first: a subquery's FROM is not the statement's
        outer = re.sub(r"\([^()]*\)", "", sql)
        if outer == sql:
            break
        sql = outer
    match = re.search(r'(?:FROM|INTO|UPDATE) "(\w+)"', sql)
    return f"{verb} {match.group(1) if match else ''}".strip()


class WsgiDriver:
    """Calls ``config.wsgi.application`` as gunicorn does and measures each request.

    CPU is this process's (``time.process_time``); on a local PostgreSQL the server process behind
    Django's connection is measured too (``/proc/<pid>/schedstat``, nanoseconds on a CPU), and every
    statement it receives is read from libpq's protocol trace, so BEGIN, COMMIT and the connection's
    health check count as well as the ORM's queries.
    """

    HEADERS = {  # what locust's FastHttpUser sends (benchmarks/load_users.py)
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_USER_AGENT": "python/gevent-http-client-1.5.5",
        "HTTP_ACCEPT_ENCODING": "gzip, deflate, br",
    }

    def __init__(self, trace_dir: Path) -> None:
        from config.wsgi import application

        self.application = application
        #: the last response's ``Location`` header
        self.location = ""
        self.trace_path = trace_dir / "libpq-trace.txt"
        self.postgres = connection.vendor == "postgresql"
        #: A second session that reads the server's WAL position around each request, so that the
        #: measured session sends nothing but the request's own statements.
        self.monitor = None
        if self.postgres:
            import psycopg

            params = connection.get_connection_params()
            params.pop("cursor_factory", None)
            self.monitor = psycopg.connect(**params, autocommit=True)

    def _wal_lsn(self) -> int:
        """The server's WAL insert position in bytes (0 off PostgreSQL)."""
        if self.monitor is None:
            return 0
        return int(self.monitor.execute("SELECT pg_current_wal_insert_lsn() - '0/0'").fetchone()[0])

    def environ(self, method: str, path: str, body: bytes = b"") -> dict[str, Any]:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "SCRIPT_NAME": "",
            "PATH_INFO": path,
            "RAW_URI": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            **self.HEADERS,
        }
        if body:
            environ["CONTENT_TYPE"] = "application/x-www-form-urlencoded"
            environ["CONTENT_LENGTH"] = str(len(body))
        return environ

    def call(self, environ: dict[str, Any]) -> tuple[int, bytes]:
        """One request, its body read and the response closed (``request_finished`` runs)."""
        status: list[str] = []

        def start_response(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
            status.append(line)
            self.location = dict(headers).get("Location", "")

        result = self.application(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            result.close()
        return int(status[0].split()[0]), body

    def _server_ns(self) -> int:
        if not self.postgres or connection.connection is None:
            return 0
        pid = connection.connection.info.backend_pid
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])

    def timed(
        self, environ: dict[str, Any], trace: bool = False, profile: Optional[cProfile.Profile] = None
    ) -> tuple[tuple[int, bytes], float, float, float, int, list[str]]:
        """(status, body), CPU ms here, wall ms, server CPU ms, the WAL bytes the server wrote meanwhile
        (every session's: run it on a server doing nothing else), and with ``trace`` the statements the
        server received (libpq writes its trace to a file, which costs CPU: traced requests are not timed)."""
        traced = trace and self.postgres and connection.connection is not None
        if traced:
            from psycopg import pq

            trace_file = self.trace_path.open("w")
            connection.connection.pgconn.trace(trace_file.fileno())
            connection.connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            l0, s0 = self._wal_lsn(), self._server_ns()
            c0, w0 = time.process_time(), time.perf_counter()
            if profile:
                profile.enable()
            result = self.call(environ)
            if profile:
                profile.disable()
            cpu, wall = (time.process_time() - c0) * 1000, (time.perf_counter() - w0) * 1000
            server = (self._server_ns() - s0) / 1e6
            wal = self._wal_lsn() - l0
        finally:
            if traced:
                connection.connection.pgconn.untrace()
                trace_file.close()
        if not traced:
            return result, cpu, wall, server, wal, []
        text = self.trace_path.read_text()
        statements = re.findall(r'^F\t\d+\t(?:Query|Parse)\t (?:"[^"]*" )?"(.*)"$', text, re.M)
        return result, cpu, wall, server, wal, statements


def profile_top(stats: cProfile.Profile, count: int, title: str) -> None:
    """Print cProfile's top ``count`` functions by own time and by cumulative time."""
    for key in ("tottime", "cumulative"):
        print(f"--- {title}: top {count} by {key} ---")
        buffer = io.StringIO()
        pstats.Stats(stats, stream=buffer).strip_dirs().sort_stats(key).print_stats(count)
        print("\n".join(line for line in buffer.getvalue().splitlines()[6:] if line.strip()))


def run_wsgi(args: argparse.Namespace, batch: Any, questions: dict[str, tuple[str, str]]) -> None:
    """Page and submit of every worker through the full WSGI handler (see the module docstring)."""
    import tempfile
    from urllib.parse import urlencode

    rows: dict[str, list[tuple[float, float, float, int]]] = {"claim": [], "page": [], "submit": []}
    samples: dict[str, list[str]] = {}
    profiles = {name: cProfile.Profile(time.process_time) for name in rows} if args.profile else {}
    workers = signed_in_workers(args.workers)
    Consent.objects.bulk_create(Consent(worker=w, batch=batch) for w in workers)
    claim = reverse("worker:next", kwargs={"batch_id": batch.pk})
    cookies = [session_cookie(w) for w in workers]
    connection.close()  # the first request opens the connection, as a fresh web worker does
    with tempfile.TemporaryDirectory() as trace_dir:
        driver = WsgiDriver(Path(trace_dir))
        for number, (worker, cookie) in enumerate(zip(workers, cookies, strict=True)):
            counted = number >= args.warmup
            # The last warm-up request is traced for its statements; counted ones are not traced.
            trace = number == args.warmup - 1
            url = ""
            for name in rows:
                if name == "claim":
                    environ = driver.environ("POST", claim, b"csrfmiddlewaretoken=" + CSRF_SECRET.encode())
                elif name == "page":
                    environ = driver.environ("GET", url)
                else:
                    assignment = Assignment.objects.get(worker=worker, hit__batch=batch)
                    passage = assignment.hit.passages.order_by("pk").first()
                    form = page_form(passage.pk, *questions[passage.text], f"profile-{number}")
                    environ = driver.environ("POST", url, urlencode(form).encode())
                environ["HTTP_COOKIE"] = cookie
                profile = profiles.get(name) if counted else None
                (status, content), cpu, wall, server, wal, sql = driver.timed(environ, trace, profile)
                if name == "claim":
                    url = driver.location
                    assert status == 302 and url.startswith("/a/"), (status, url, content[:300])
                else:
                    if content[:2] == b"\x1f\x8b":
                        content = gzip.decompress(content)
                    expected = b'name="question"' if name == "page" else b"Thank you"
                    assert status == 200 and expected in content, (status, content[:300])
                if trace:
                    samples[name] = sql
                if counted:
                    rows[name].append((cpu, wall, server, wal))
        if driver.monitor is not None:
            driver.monitor.close()  # before the test database is dropped
    counted = args.workers - args.warmup
    print(
        f"database: {connection.vendor}; full WSGI handler ({len(settings.MIDDLEWARE)} middleware, "
        f"DEBUG={settings.DEBUG}); {counted} requests each after {args.warmup} warm-up; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    for name, values in rows.items():
        cpu, wall, server, wal = (statistics.median(v[k] for v in values) for k in range(4))
        n = len(samples.get(name, []))
        mean_cpu = statistics.fmean(v[0] for v in values)
        mean_server = statistics.fmean(v[2] for v in values)
        print(
            f"{name:>6}: {n:.0f} statements, CPU median {cpu:.2f} ms (mean {mean_cpu:.2f}), "
            f"server CPU median {server:.2f} ms (mean {mean_server:.2f}), wall median {wall:.1f} ms"
            + (f", WAL median {wal:.0f} bytes" if driver.monitor else "")
        )
    if args.show_sql:
        for name, sql in samples.items():
            print(f"one {name}'s statements:")
            for statement in sql:
                print(f"  {statement[:110]}")
    for name, profile in profiles.items():
        profile_top(profile, args.profile, name)
        if args.profile_dir:
            profile.dump_stats(args.profile_dir / f"{name}.prof")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=30)
    parser.add_argument("--data", type=Path, default=shared_data_dir() / "sciq")
    parser.add_argument("--show-sql", action="store_true")
    parser.add_argument("--wsgi", action="store_true", help="the page and submit through the full handler")
    parser.add_argument(
        "--warmup",
        type=int,
        default=5,
        help="--wsgi: workers not counted (the last one's statements are traced)",
    )
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="--wsgi: cProfile's top N")
    parser.add_argument(
        "--profile-dir",
        type=Path,
        help="--wsgi --profile: also write claim.prof, page.prof, submit.prof here",
    )
    args = parser.parse_args()
    if not args.wsgi:
        setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        questions = load(args.data, args.workers * 3 + 3)
        batch = create_batch(BatchSpec(kind="sciq_question", corpus="sciq", limit=args.workers + 1))
        batch.publish()
        if args.wsgi:
            run_wsgi(args, batch, questions)
            return
        rows: dict[str, list[tuple[float, float, int]]] = {"claim": [], "page": [], "submit": []}
        sample: list[str] = []
        for i in range(args.workers):
            worker = Worker.objects.get_or_create_for("local", f"profile-{i}")
            assignment, cpu, wall, sql = timed(lambda w=worker: claim_next(batch, w))
            rows["claim"].append((cpu, wall, len(sql)))
            Consent.objects.get_or_create(worker=worker, batch=batch)
            url = hit_links.url_for(assignment)
            client = Client()
            response, cpu, wall, sql = timed(lambda u=url, c=client: c.get(u))
            assert response.status_code == 200, response.status_code
            rows["page"].append((cpu, wall, len(sql)))
            passage = assignment.hit.passages.order_by("pk").first()
            question, answer = questions[passage.text]
            data = page_form(passage.pk, question, answer, f"profile-{i}")
            response, cpu, wall, sql = timed(lambda u=url, c=client, d=data: c.post(u, d))
            assert response.status_code == 200 and b"Thank you" in response.content, response.content[:300]
            rows["submit"].append((cpu, wall, len(sql)))
            sample = sql
        print(
            f"database: {connection.vendor}; medians over {args.workers} workers (one process, test client)"
        )
        for name, values in rows.items():
            cpu, wall, n = (statistics.median(v[k] for v in values) for k in range(3))
            print(f"{name:>6}: {n:.0f} queries, {cpu:.1f} ms CPU, {wall:.1f} ms wall")
        if args.show_sql:
            print("one submit's statements:")
            for label, count in Counter(table_of(q) for q in sample).items():
                print(f"  {count} x {label}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
