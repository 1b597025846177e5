"""CPU per call of the signed link's read and of a SciQ HIT's passages, against the plain querysets.

Every request on a signed HIT link (page, autosave, submit, span lookup, consent, return) reads its
assignment with the HIT, batch, corpus, document, worker and the consent answer
(:func:`worker.hit_links.assignment_for`); every SciQ stage-1 page and submit reads the HIT's three
passages. This script creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``; SQLite
when unset), one such assignment and HIT, and times ``--calls`` reads of each variant in this process
(``time.process_time``, so other processes on the machine do not count). On PostgreSQL it also reads
the server process's CPU for the same calls (``/proc/<backend pid>/stat``, same machine only).

    DATABASE_URL=postgres://postgres@127.0.0.1:5451/crowdqa .venv/bin/python benchmarks/link_read.py

Variants: ``plain`` builds the queryset per call (what a view would write); ``reused`` builds it once and
calls ``.get(pk=)`` on it per call (annotation resolved once, SQL compiled per call); ``shipped`` is what
the application uses (:func:`~worker.hit_links.assignment_for`, without the token's signature check,
timed apart as ``unsign``). Last, a SciQ page's or submit's two reads (the link, the HIT's passages) one
after the other and together in one round trip (``assignment_for(token, passages=True)``), alternated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.db.models import Exists, OuterRef  # noqa: E402
from django.test.utils import CaptureQueriesContext, setup_test_environment  # noqa: E402

from annotation import hit_passages  # noqa: E402
from annotation.models import HIT, Assignment, Passage  # noqa: E402
from crowd.models import Consent  # noqa: E402
from tests.factories import make_assignment, make_batch, make_document, make_textbook, make_worker  # noqa: E402
from worker import hit_links  # noqa: E402


def plain_link_read(pk: int) -> Assignment:
    consent = Consent.objects.filter(worker=OuterRef("worker_id"), batch=OuterRef("hit__batch_id"))
    return (
        Assignment.objects.select_related("hit__batch__corpus", "hit__document", "worker")
        .annotate(has_consent=Exists(consent))
        .get(pk=pk)
    )


REUSED = Assignment.objects.select_related("hit__batch__corpus", "hit__document", "worker").annotate(
    has_consent=Exists(Consent.objects.filter(worker=OuterRef("worker_id"), batch=OuterRef("hit__batch_id")))
)


def _server_ticks() -> int | None:
    """The database server process's user+system CPU in clock ticks (PostgreSQL on this machine only)."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


def measure(name: str, call: Callable[[], Any], calls: int) -> None:
    """Print CPU ms per call (this process, and the database server's where readable) and statements."""
    for _ in range(50):  # warm-up: first-call compilation and caches are not what a busy server pays
        call()
    with CaptureQueriesContext(connection) as queries:
        call()
    ticks0 = _server_ticks()
    start = time.process_time()
    for _ in range(calls):
        call()
    cpu = (time.process_time() - start) * 1000 / calls
    ticks1 = _server_ticks()
    server = ""
    if ticks0 is not None and ticks1 is not None:
        server_ms = (ticks1 - ticks0) * 1000 / os.sysconf("SC_CLK_TCK") / calls
        server = f", server {server_ms:.3f} ms"
    print(f"{name:>28}: {cpu:.3f} ms CPU per call{server}, {len(queries)} statement(s)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        batch = make_batch(options={"completion_code": "C0DE", "locales": ["de"]}, description="A batch.")
        document = make_document(corpus=batch.corpus, metadata={"course": "CS 101"})
        hit = HIT.objects.create(batch=batch, position=0, document=document)
        assignment = make_assignment(
            batch=batch, hit=hit, worker=make_worker("w-bench"), draft={"question": "Why?"}
        )
        Consent.objects.create(worker=assignment.worker, batch=batch)
        corpus = make_textbook("tb", [f"Passage number {i} about cells and their parts." for i in range(3)])
        passages_hit = HIT.objects.create(batch=make_batch(corpus=corpus, name="b2"), position=0)
        passages_hit.passages.set(Passage.objects.filter(corpus=corpus))
        token, pk = hit_links.token_for(assignment), assignment.pk
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"database: {connection.vendor}; {args.calls} calls per variant; load average {load}")
        print("the signed link's read (assignment, HIT, batch, corpus, document, worker, consent):")
        measure("plain queryset per call", lambda: plain_link_read(pk), args.calls)
        measure("queryset reused, .get(pk=)", lambda: REUSED.get(pk=pk), args.calls)
        measure("shipped (assignment_for)", lambda: hit_links.assignment_for(token), args.calls)
        measure("  of which unsign", lambda: hit_links._unsign(token, hit_links.SALT), args.calls)
        measure(
            "one table, Manager.raw",
            lambda: list(Assignment.objects.raw("SELECT * FROM annotation_assignment WHERE id = %s", [pk])),
            args.calls,
        )
        print("a SciQ HIT's three passages:")
        measure(
            "plain queryset per call",
            lambda: list(Passage.objects.filter(hits=passages_hit.pk).order_by("pk")),
            args.calls,
        )
        measure("shipped", lambda: hit_passages.BY_HIT.all(passages_hit.pk), args.calls)
        passages_token = hit_links.token_for(
            make_assignment(batch=passages_hit.batch, hit=passages_hit, worker=make_worker("w-passages"))
        )

        def link_then_passages() -> None:
            hit_passages.offered(hit_links.assignment_for(passages_token).hit)

        def link_with_passages() -> None:
            hit_passages.offered(hit_links.assignment_for(passages_token, passages=True).hit)

        print("the link and the passages, as a SciQ page or submit reads them:")
        for _ in range(3):  # alternated: a drift of the machine's speed shows as a spread, not a gap
            measure("link, then passages", link_then_passages, args.calls)
            measure("together (one round trip)", link_with_passages, args.calls)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
