"""What preparing the submit's statements saves: PostgreSQL's and this process's CPU per SciQ question submit.

Creates a throw-away test database (``test_<name>`` of ``DATABASE_URL``, which must be PostgreSQL), loads
real SciQ validation passages from the shared data, publishes a stage-1 batch and has a worker claim a
HIT. Each round then runs the submit's database work as the HIT view runs it (the signed link's read
under the row lock, the check with its read of the HIT's passages, the assignment's conditional UPDATE,
the pair's INSERT and the passage's take), ``--submits`` times, each in a transaction that is rolled back,
under three settings alternated round by round:

- ``none``: every statement sent as SQL (PostgreSQL parses and plans each one every time);
- ``reads``: the two reads prepared once per session, the writes sent as SQL;
- ``apart``: reads and writes prepared, each write its own round trip (the submit's UPDATE, then the
  pair's INSERT with its passage's take, one statement on PostgreSQL);
- ``all``: reads and writes prepared (``annotation/sql_prepared.py``), the submit's UPDATE and the pair's
  INSERT with its passage's take in one round trip (``annotation.sql_writes.together``): as deployed.

It prints the medians per submit of the server process's CPU (``/proc/<pid>/schedstat``) and of this
process's CPU, and the paired ratios of ``all`` against ``reads`` and against ``apart``::

    DATABASE_URL=postgres://postgres@127.0.0.1:5440/crowdqa_bench \\
        .venv/bin/python benchmarks/prepared_statements.py --rounds 6 --submits 400
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import submit_profile  # noqa: F401 - sets up Django, as the other profiles of the submit do
from django.db import connection, transaction
from submit_profile import load

from annotation import sql_prepared
from annotation.hits import handler_for
from annotation.services.batches import BatchSpec, create_batch
from config.shared_data import shared_data_dir
from crowd.models import Consent, Worker
from worker import hit_links
from worker.assigning import claim_next

PREPARE = sql_prepared.statement


def as_sql(connection: Any, sql: str) -> str:
    return sql


def reads_only(connection: Any, sql: str) -> str:
    return PREPARE(connection, sql) if sql.startswith("SELECT") else sql


SEVERAL = sql_prepared.several_per_query


def one_per_query(connection: Any) -> bool:
    return False


#: What each setting sends: how a statement is sent, and whether several go in one query string.
SETTINGS: dict[str, tuple[Callable[[Any, str], str], Callable[[Any], bool]]] = {
    "none": (as_sql, SEVERAL),
    "reads": (reads_only, SEVERAL),
    "apart": (PREPARE, one_per_query),
    "all": (PREPARE, SEVERAL),
}


def use(setting: tuple[Callable[[Any, str], str], Callable[[Any], bool]]) -> None:
    sql_prepared.statement, sql_prepared.several_per_query = setting


def server_ns() -> int:
    pid = connection.connection.info.backend_pid
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def one_round(token: str, fields: dict[str, str], submits: int) -> tuple[float, float]:
    """Server and client CPU ms per submit over ``submits`` rolled-back submits."""
    server, client = server_ns(), time.process_time_ns()
    for _ in range(submits):
        with transaction.atomic():
            assignment = hit_links.assignment_for(token, lock=True)
            handler = handler_for(assignment.hit.batch.kind)
            check = handler.checked(assignment.hit, assignment, fields)
            assert check.ok, check.errors
            handler.submit(assignment, check)
            transaction.set_rollback(True)
    return (server_ns() - server) / submits / 1e6, (time.process_time_ns() - client) / submits / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--submits", type=int, default=400)
    parser.add_argument("--data", type=Path, default=shared_data_dir() / "sciq")
    args = parser.parse_args()
    if connection.vendor != "postgresql":
        raise SystemExit("set DATABASE_URL to a PostgreSQL server: the statements are prepared there only")
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        questions = load(args.data, 6)
        batch = create_batch(BatchSpec(kind="sciq_question", corpus="sciq", limit=1))
        batch.publish()
        worker = Worker.objects.get_or_create_for("local", "prepared-statements")
        assignment = claim_next(batch, worker)
        Consent.objects.get_or_create(worker=worker, batch=batch)
        passage = assignment.hit.passages.order_by("pk").first()
        question, answer = questions[passage.text]
        fields = {"passage": str(passage.pk), "question": question, "answer": answer}
        token = hit_links.token_for(assignment)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in SETTINGS}
        try:
            for setting in SETTINGS.values():  # warm-up: the session prepares what it will use
                use(setting)
                one_round(token, fields, 20)
            for number in range(args.rounds):
                order = list(SETTINGS.items())
                shift = number % len(order)
                for name, setting in order[shift:] + order[:shift]:
                    use(setting)
                    results[name].append(one_round(token, fields, args.submits))
        finally:
            use((PREPARE, SEVERAL))
        print(
            f"PostgreSQL {connection.pg_version}; {args.rounds} rounds x {args.submits} rolled-back submits"
            " per setting, order rotated; CPU ms per submit, median over rounds (range)"
        )
        for name, values in results.items():
            server = [v[0] for v in values]
            client = [v[1] for v in values]
            print(
                f"  {name:>5}: server {statistics.median(server):.3f} ({min(server):.3f}-{max(server):.3f}), "
                f"this process {statistics.median(client):.3f} ({min(client):.3f}-{max(client):.3f})"
            )
        for base in ("reads", "apart"):
            for index, label in ((0, "server"), (1, "this process")):
                ratios = [a[index] / b[index] for a, b in zip(results["all"], results[base], strict=True)]
                low, high = min(ratios), max(ratios)
                print(f"  all / {base}, {label}: {statistics.median(ratios):.2f} ({low:.2f}-{high:.2f})")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
