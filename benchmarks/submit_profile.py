"""Profile the SciQ question HIT's page and submit requests in one process: SQL queries, CPU and wall ms.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite when unset), loads real
SciQ validation passages from the shared data, publishes a stage-1 batch (three passages per HIT) and
has ``--workers`` distinct workers each claim a HIT, open its page and submit the real SciQ question of
their first passage through Django's test client. Prints medians per request and, with ``--show-sql``,
the statements of one submit grouped by table, so the request's transaction can be read.

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/submit_profile.py --workers 30 --show-sql
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from annotation.hits.sciq_question import QC_OPTIONS  # noqa: E402
from annotation.importers.mcq import read_sciq  # noqa: E402
from annotation.models import Corpus, Passage, sha256_text  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=30)
    parser.add_argument("--data", type=Path, default=shared_data_dir() / "sciq")
    parser.add_argument("--show-sql", action="store_true")
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        questions = load(args.data, args.workers * 3 + 3)
        batch = create_batch(BatchSpec(kind="sciq_question", corpus="sciq", limit=args.workers + 1))
        batch.publish()
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
            data = {"passage": str(passage.pk), "question": question, "answer": answer}
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
