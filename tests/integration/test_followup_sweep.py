"""A follow-up of a submission (the HIT's completion here) survives a worker killed with -9 while it holds
the message, on the embedded file broker and on Redis: the periodic sweep re-queues it and a fresh
worker runs it.

The first worker takes the message and then blocks on the database (the test holds a lock on the
assignment table on PostgreSQL, the write lock on SQLite), so the kill lands while the message is taken
and nothing has been written: the file broker has already deleted the message and Redis keeps it
unacked for its one-hour visibility timeout.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from annotation.models import HIT, Assignment, QAPair
from annotation.services.batches import BatchSpec, create_batch
from config.broker import file_broker_options
from config.celery import app as celery_app
from crowd.services import followups
from tests.factories import make_textbook, make_worker
from tests.integration.test_review_flow import _wait_for
from worker.assigning import claim_next

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSAGES = (
    "Oxidants are compounds that are capable of accepting electrons from other substances.",
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


@contextmanager
def _database_locked(lock: str = "annotation_assignment IN ACCESS EXCLUSIVE MODE") -> Iterator[None]:
    """Hold a lock that blocks the follow-up job's statements (its writes, on SQLite) until the block
    ends; on PostgreSQL the table and mode of ``lock`` (``LOCK TABLE``)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        other = sqlite3.connect(db["NAME"], isolation_level=None, timeout=30)
        other.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            other.execute("ROLLBACK")
            other.close()
        return
    import psycopg

    params = {"user": db.get("USER"), "host": db.get("HOST"), "port": db.get("PORT")}
    with psycopg.connect(dbname=db["NAME"], **{k: v for k, v in params.items() if v}) as other:
        other.execute(f"LOCK TABLE {lock}")
        yield
        other.rollback()


def _submission() -> Assignment:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    batch.publish()
    assignment = claim_next(batch, make_worker("writer"))
    passage = assignment.hit.passages.get(text=PASSAGES[0])
    assignment.submit({"passage": str(passage.pk), "question": "What accepts electrons?", "answer": "glue"})
    QAPair.objects.create(
        assignment=assignment,
        passage=passage,
        corpus=batch.corpus,
        question_type="sciq",
        question="What accepts electrons?",
        answer="glue",
    )
    return assignment


@pytest.mark.parametrize("broker", ["filesystem", "redis"])
def test_killed_worker__the_sweep_requeues_the_lost_qc(
    broker: str,
    request,
    celery_worker_process,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    assignment = _submission()
    var_dir = tmp_path / "var"
    redis = request.getfixturevalue("redis_url") if broker == "redis" else None
    if redis:
        import redis as redis_client

        client = redis_client.Redis.from_url(redis)
        conn_args: dict = {"url": redis}
        taken = lambda: client.llen("default") == 0  # noqa: E731
    else:
        options = file_broker_options(var_dir / "broker")
        conn_args = {"url": "filesystem://", "transport_options": options}
        taken = lambda: not any((var_dir / "broker" / "queue").iterdir())  # noqa: E731

    with celery_app.connection_for_write(**conn_args) as conn:
        with _database_locked():
            doomed = celery_worker_process("default", "doomed", redis, var_dir=var_dir)
            followups.queue_after_submission(assignment.pk, connection=conn)
            assert _wait_for(taken), "the first worker never took the message"
            time.sleep(0.5)
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=10)
        assignment.refresh_from_db()
        assert assignment.followed_up_at is None
        assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.OPEN

        later = timezone.now() + timedelta(seconds=settings.CROWDQA_FOLLOWUP_TIME_LIMIT + 1)
        requeued = followups.requeue_lost_followups(now=later, connection=conn)
        assert requeued == {"assignments": [assignment.pk], "pairs": []}

    celery_worker_process("default", "rescuer", redis, var_dir=var_dir)
    assert _wait_for(
        lambda: Assignment.objects.filter(pk=assignment.pk, followed_up_at__isnull=False).exists()
    )
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED
