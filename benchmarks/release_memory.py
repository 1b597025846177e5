"""Peak memory, wall and CPU time of ``export_release`` as the release grows (does the build stream?).

Usage (PostgreSQL; the server and user of ``DATABASE_URL`` are used, the database is the benchmark's own
``<name>_relmem``, created and dropped for each size; without a PostgreSQL ``DATABASE_URL`` a SQLite file
in a temporary folder is used)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_mem \\
        .venv/bin/python benchmarks/release_memory.py --pairs 10000 100000 1000000

For each size N, a child process fills a fresh database with N crowd QA pairs whose texts are the real
SyllabusQA ones (../shared/data/syllabusqa, or CROWDQA_SHARED_DATA): the 5,078 released pairs (question,
answer, spans, reasoning steps, type) are repeated over copies of their 63 syllabi, each copy a new
document with the real syllabus text, so about 80 pairs per document and N / 80 documents as in the
real release. Pairs are grouped 14 to an approved assignment of one of 500 workers, as SyllabusQA's
HITs are. Rows are written with bulk inserts. A second, fresh child then runs the real
``manage.py export_release --corpus ...`` (all formats, card, privacy scan, manifest) into a temporary
folder. Its peak RSS (``ru_maxrss`` from ``wait4``), CPU time, wall time and the size of the release are
printed, one line per size, then one JSON line with every figure. The database and files are removed
whatever happens, also when the run is interrupted (Ctrl-C, SIGTERM). Target: peak RSS under 1 GB for
1,000,000 pairs and not growing with N; time linear in N.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The reviewed public office contacts of the real SyllabusQA texts, allowed as the real-data tests do.
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS  # noqa: E402

CORPUS = "release-memory"
PAIRS_PER_ASSIGNMENT = 14
WORKERS = 500
CHUNK = 5_000


def _postgres(url: str) -> bool:
    return url.startswith(("postgres://", "postgresql://"))


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def _admin(url: str, statements: list[str]) -> None:
    import psycopg

    with psycopg.connect(_with_database(url, "postgres"), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


class Database:
    """A throw-away database for one size: PostgreSQL ``<name>_relmem`` or a SQLite file in ``folder``."""

    def __init__(self, base_url: str, folder: Path) -> None:
        if _postgres(base_url):
            self.name = urlsplit(base_url).path.lstrip("/") + "_relmem"
            self.url = _with_database(base_url, self.name)
            self.base = base_url
        else:
            self.name = str(folder / "release-memory.sqlite3")
            self.url = f"sqlite:///{self.name}"
            self.base = ""

    def create(self) -> None:
        if self.base:
            _admin(
                self.base,
                [f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)', f'CREATE DATABASE "{self.name}"'],
            )

    def drop(self) -> None:
        if self.base:
            _admin(self.base, [f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)'])
        else:
            Path(self.name).unlink(missing_ok=True)


def _child_env(database_url: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DJANGO_DEBUG", None)  # DEBUG keeps every query's SQL; a deployment runs without it
    return env


# ----------------------------------------------------------------------------------------------------
# Child 1: fill the database (run as ``release_memory.py --fill N``).


def _real_pairs(root: Path) -> dict[str, list[Any]]:
    """The released SyllabusQA rows, grouped by syllabus in file order."""
    from annotation.importers.syllabusqa_csv import read_qa_rows

    by_syllabus: dict[str, list[Any]] = defaultdict(list)
    for row in read_qa_rows(root):
        by_syllabus[row.syllabus_name].append(row)
    return by_syllabus


def _real_texts(root: Path, names: list[str]) -> dict[str, str]:
    folder = root / "syllabi" / "syllabi_redacted" / "text_utf8"
    return {name: (folder / f"{name}.txt").read_text(encoding="utf-8") for name in names}


def _plan(n: int, by_syllabus: dict[str, list[Any]]) -> Iterator[tuple[int, str, list[Any]]]:
    """(copy, syllabus, its rows) until ``n`` rows are planned; the last copy may be cut short."""
    left = n
    copy = 0
    while left > 0:
        for name, rows in by_syllabus.items():
            if left <= 0:
                return
            take = rows[:left]
            left -= len(take)
            yield copy, name, take
        copy += 1


def fill(n: int) -> dict[str, Any]:
    """Migrate the child's database and write ``n`` QA pairs (see the module docstring)."""
    import hashlib

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    from annotation.importers.syllabusqa import read_metadata
    from annotation.models import HIT, AnswerSpan, Assignment, Batch, Corpus, Document, QAPair, ReasoningStep
    from config.shared_data import dataset_dir
    from crowd.models import Worker, pseudonym_for

    root = dataset_dir("syllabusqa")
    if root is None:
        sys.exit("syllabusqa data not found under ../shared/data; set CROWDQA_SHARED_DATA")
    t0 = time.perf_counter()
    call_command("migrate", verbosity=0)
    t_migrate = time.perf_counter() - t0
    by_syllabus = _real_pairs(root)
    texts = _real_texts(root, list(by_syllabus))
    digests = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in texts.items()}
    meta = read_metadata(root)
    rng = random.Random(0)

    t0 = time.perf_counter()
    corpus = Corpus.objects.create(name=CORPUS, kind=Corpus.Kind.SYLLABUS, license="CC BY-NC 4.0")
    batch = Batch.objects.create(
        name=CORPUS, kind=Batch.Kind.SYLLABUS_QA, corpus=corpus, status=Batch.Status.COMPLETED
    )
    workers = Worker.objects.bulk_create(
        Worker(platform="mturk", platform_id=f"A{i:013d}", pseudonym=pseudonym_for("mturk", f"A{i:013d}"))
        for i in range(WORKERS)
    )
    documents = pairs = spans = steps = hit_count = 0
    pending: list[tuple[str, int, list[Any]]] = []  # (document name, copy, rows) awaiting insert

    def flush() -> None:
        nonlocal documents, pairs, spans, steps, hit_count
        if not pending:
            return
        with transaction.atomic():
            docs = Document.objects.bulk_create(
                Document(
                    corpus=corpus,
                    name=f"{name}-{copy:04d}",
                    text=texts[name],
                    text_sha256=digests[name],
                    metadata={k: v for k, v in meta.get(name, {}).items() if k != "meta_row"},
                )
                for name, copy, _ in pending
            )
            hits, hit_rows = [], []
            for doc, (_, _, rows) in zip(docs, pending, strict=True):
                for start in range(0, len(rows), PAIRS_PER_ASSIGNMENT):
                    hits.append(
                        HIT(
                            batch=batch,
                            position=hit_count + len(hits),
                            document=doc,
                            status=HIT.Status.COMPLETED,
                        )
                    )
                    hit_rows.append((doc, rows[start : start + PAIRS_PER_ASSIGNMENT]))
            hits = HIT.objects.bulk_create(hits)
            now = timezone.now()
            assignments = Assignment.objects.bulk_create(
                Assignment(
                    hit=hit,
                    worker=workers[rng.randrange(WORKERS)],
                    status=Assignment.Status.APPROVED,
                    submitted_at=now,
                    reviewed_at=now,
                    time_on_task_seconds=round(rng.lognormvariate(7.3, 0.5), 1),
                )
                for hit in hits
            )
            qa_rows = [
                (assignment, doc, position, row)
                for assignment, (doc, rows) in zip(assignments, hit_rows, strict=True)
                for position, row in enumerate(rows)
            ]
            made = QAPair.objects.bulk_create(
                QAPair(
                    corpus=corpus,
                    document=doc,
                    assignment=assignment,
                    position=position,
                    question_type=row.question_type,
                    question=row.question,
                    answer=row.answer,
                    status=QAPair.Status.ACCEPTED,
                )
                for assignment, doc, position, row in qa_rows
            )
            span_objs = [
                AnswerSpan(qa_pair=qa, position=i, text=text)
                for qa, (_, _, _, row) in zip(made, qa_rows, strict=True)
                for i, text in enumerate(row.spans)
            ]
            step_objs = [
                ReasoningStep(qa_pair=qa, position=i, text=text)
                for qa, (_, _, _, row) in zip(made, qa_rows, strict=True)
                for i, text in enumerate(row.steps)
            ]
            AnswerSpan.objects.bulk_create(span_objs, batch_size=CHUNK)
            ReasoningStep.objects.bulk_create(step_objs, batch_size=CHUNK)
        documents += len(docs)
        hit_count += len(hits)
        pairs += len(made)
        spans += len(span_objs)
        steps += len(step_objs)
        pending.clear()

    queued = 0
    for copy, name, rows in _plan(n, by_syllabus):
        pending.append((name, copy, rows))
        queued += len(rows)
        if queued >= CHUNK:
            flush()
            queued = 0
    flush()
    return {
        "migrate_s": round(t_migrate, 1),
        "fill_s": round(time.perf_counter() - t0, 1),
        "documents": documents,
        "pairs": pairs,
        "spans": spans,
        "steps": steps,
    }


# ----------------------------------------------------------------------------------------------------
# Child 2: the export, measured from the parent.


def _measured(command: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``command``; return its exit code, wall time and rusage (peak RSS, CPU) from ``wait4``."""
    with log.open("wb") as out:
        t0 = time.perf_counter()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:  # interrupted: stop the export before its database and folder are removed
            process.kill()
            process.wait()
            raise
        wall = time.perf_counter() - t0
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "returncode": process.returncode,
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "system_s": usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # KiB on Linux
    }


def _folder_bytes(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def measure(n: int, base_url: str, scratch: Path) -> dict[str, Any]:
    """Fill a fresh database with ``n`` pairs, export it in a fresh process, clean up; return figures."""
    work = Path(tempfile.mkdtemp(prefix=f"release-memory-{n}-", dir=scratch))
    database = Database(base_url, work)
    try:
        database.create()
        env = _child_env(database.url)
        filled = subprocess.run(
            [sys.executable, __file__, "--fill", str(n)],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        facts = json.loads(filled.stdout.strip().splitlines()[-1])
        out = work / "out"
        command = [
            sys.executable, "manage.py", "export_release", "--corpus", CORPUS,
            "--name", CORPUS, "--version", str(n), "--out", str(out),
            *(arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)),
        ]  # fmt: skip
        log = work / "export.log"
        run = _measured(command, env, log)
        if run["returncode"] != 0:
            sys.exit(f"export_release failed for {n:,} pairs:\n{log.read_text(errors='replace')[-4000:]}")
        summary = json.loads(log.read_text(encoding="utf-8").strip().splitlines()[-1])
        size, files = _folder_bytes(Path(summary["path"]))
        return {
            "pairs": facts["pairs"],
            "documents": facts["documents"],
            "spans": facts["spans"],
            "steps": facts["steps"],
            "database": "postgresql" if database.base else "sqlite",
            "fill_s": facts["fill_s"],
            "export_wall_s": round(run["wall_s"], 1),
            "export_cpu_s": round(run["user_s"] + run["system_s"], 1),
            "export_user_s": round(run["user_s"], 1),
            "peak_rss_mb": round(run["peak_rss_mb"]),
            "release_mb": round(size / 1e6, 1),
            "files": files,
            "counts": summary["counts"],
        }
    finally:
        try:
            database.drop()
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, nargs="+", default=[10_000, 100_000], help="release sizes")
    parser.add_argument(
        "--scratch", type=Path, default=None, help="folder for the temporary release (default: the system's)"
    )
    parser.add_argument("--fill", type=int, help=argparse.SUPPRESS)  # the filling child
    args = parser.parse_args()
    # A terminated run still removes its database and files (the ``finally`` of :func:`measure`).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.fill is not None:
        print(json.dumps(fill(args.fill)))
        return
    base_url = os.environ.get("DATABASE_URL", "")
    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    print(
        f"database: {'PostgreSQL' if _postgres(base_url) else 'SQLite (temporary file)'}; load average {load}"
    )
    results = []
    for n in args.pairs:
        result = measure(n, base_url, args.scratch or Path(tempfile.gettempdir()))
        results.append(result)
        print(
            f"{result['pairs']:>9,} pairs / {result['documents']:>6,} documents: export_release "
            f"{result['export_wall_s']:.1f} s wall, {result['export_cpu_s']:.1f} s CPU, "
            f"peak RSS {result['peak_rss_mb']:,} MB, release {result['release_mb']:,} MB in "
            f"{result['files']} files (fill {result['fill_s']:.0f} s)",
            flush=True,
        )
    with open("/proc/loadavg", encoding="ascii") as handle:
        load = " ".join(handle.read().split()[:3])
    print(f"load average after: {load}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
