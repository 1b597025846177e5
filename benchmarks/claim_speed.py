"""Cost of one claim ("next HIT") as the batch grows: CPU ms, wall ms and SQL queries per claim.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite when unset), then for
each batch size builds a published stage-2 batch of that many HITs, lets ``--held`` workers claim first
(HITs in progress ahead of the free ones) and times ``--claims`` further claims by distinct workers.
Target: flat from 500 to 100,000 HITs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/claim_speed.py --sizes 500 10000 100000
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
from django.test.utils import CaptureQueriesContext  # noqa: E402

from annotation.models import HIT, Batch, Corpus  # noqa: E402
from crowd.models import Worker  # noqa: E402
from worker.assigning import claim_next  # noqa: E402


def build(size: int) -> Batch:
    """A published batch of ``size`` one-slot HITs."""
    corpus = Corpus.objects.create(name=f"claim-{size}", kind=Corpus.Kind.TEXTBOOK)
    batch = Batch.objects.create(name=f"claim-{size}", kind=Batch.Kind.SCIQ_DISTRACTOR, corpus=corpus)
    HIT.objects.bulk_create((HIT(batch=batch, position=i) for i in range(size)), batch_size=5000)
    batch.publish()
    return batch


def measure(size: int, held: int, claims: int) -> dict[str, float]:
    """Median CPU/wall ms and queries of ``claims`` claims after ``held`` HITs were taken."""
    batch = build(size)
    for i in range(held):
        claim_next(batch, Worker.objects.get_or_create_for("local", f"held-{size}-{i}"))
    cpu, wall, queries = [], [], []
    for i in range(claims):
        worker = Worker.objects.get_or_create_for("local", f"ask-{size}-{i}")
        with CaptureQueriesContext(connection) as ctx:
            c0, w0 = time.process_time(), time.perf_counter()
            claim_next(batch, worker)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
        queries.append(len(ctx.captured_queries))
    return {
        "cpu": statistics.median(cpu),
        "wall": statistics.median(wall),
        "queries": statistics.median(queries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 10_000, 100_000])
    parser.add_argument("--held", type=int, default=50, help="HITs claimed (in progress) before timing")
    parser.add_argument("--claims", type=int, default=30)
    args = parser.parse_args()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        print(f"database: {connection.vendor}; {args.held} HITs held, median of {args.claims} claims")
        for size in args.sizes:
            m = measure(size, args.held, args.claims)
            print(
                f"{size:>7} HITs: {m['cpu']:.1f} ms CPU, {m['wall']:.1f} ms wall, "
                f"{m['queries']:.0f} queries/claim"
            )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
