"""Cost of creating a SciQ stage-1 batch while other batches hold many open HITs: wall and CPU seconds.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite when unset). For each
``--open`` size, other published batches are given that many open HITs (three passages each, in corpora
of their own, written in bulk), then ``--batches`` SciQ stage-1 batches of ``--hits`` HITs each are
created through ``create_batch`` (the console's and ``manage.py create_batch``'s path), each in a
fresh corpus of real SciQ passages. Prints the median wall time and this process's CPU per batch, and
the database's plan of the free-passage query.

Why: which passages a new HIT may show excludes those every open HIT of a live batch shows; a lab that
runs many batches over time must not pay for the others' HITs in each batch it creates.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/batch_creation.py --open 0 10000 100000 --hits 300
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

from django.db import connection  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from annotation.importers.mcq import read_sciq  # noqa: E402
from annotation.models import Batch  # noqa: E402
from annotation.services.batches import (  # noqa: E402
    BatchSpec,
    add_passage_hits,
    create_batch,
    passages_free_for_hits,
)
from config.shared_data import shared_data_dir  # noqa: E402
from tests.factories import make_textbook  # noqa: E402


def add_open_hits(count: int, texts: list[str], start: int) -> None:
    """``count`` open HITs of published batches, three passages each, in corpora of their own."""
    per_corpus = len(texts) // 3
    made = 0
    while made < count:
        size = min(per_corpus, count - made)
        corpus = make_textbook(f"open-{start + made}", texts[: size * 3])
        batch = Batch.objects.create(
            name=f"open-{start + made}",
            kind=Batch.Kind.SCIQ_QUESTION,
            corpus=corpus,
            status=Batch.Status.PUBLISHED,
        )
        made += add_passage_hits(batch, size)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--open", type=int, nargs="+", default=[0, 10000, 100000], help="open HITs elsewhere")
    parser.add_argument("--hits", type=int, default=300, help="HITs of each batch created")
    parser.add_argument("--batches", type=int, default=3, help="batches created per size")
    parser.add_argument("--data", type=Path, default=None, help="SciQ folder (default: shared data)")
    args = parser.parse_args()

    data = args.data or shared_data_dir() / "sciq"
    texts = sorted({" ".join(row.passage.split()) for row in read_sciq(data)} - {""})
    if len(texts) < args.hits * 3:
        sys.exit(f"SciQ has {len(texts)} distinct passages; --hits needs {args.hits * 3}")

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, keepdb=False)
    try:
        print(f"database: {connection.vendor}; {args.batches} batches of {args.hits} HITs per size")
        print(
            "| open HITs elsewhere | wall s per batch (median, range) | CPU s per batch | free-passage plan |"
        )
        print("|---|---|---|---|")
        made = 0
        for size in sorted(args.open):
            add_open_hits(size - made, texts, made)
            made = size
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            walls, cpus = [], []
            for number in range(args.batches):
                corpus = make_textbook(f"new-{size}-{number}", texts[: args.hits * 3])
                wall, cpu = time.perf_counter(), time.process_time()
                batch = create_batch(BatchSpec(kind="sciq_question", corpus=corpus.name, limit=args.hits))
                walls.append(time.perf_counter() - wall)
                cpus.append(time.process_time() - cpu)
                assert batch.hits.count() == args.hits
            plan = ""
            if connection.vendor == "postgresql":
                sql, params = passages_free_for_hits(corpus).query.sql_with_params()
                with connection.cursor() as cursor:
                    cursor.execute("EXPLAIN " + sql, params)
                    lines = [row[0] for row in cursor.fetchall()]
                plan = "; ".join(line.strip() for line in lines if "Join" in line or "SubPlan" in line)
            print(
                f"| {size:,} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
                f"{statistics.median(cpus):.2f} | {plan or '-'} |",
                flush=True,
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
