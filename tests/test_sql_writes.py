"""An UPDATE written as SQL (:mod:`annotation.sql_writes`) stores exactly what its queryset stores.

Each statement the submission runs is applied to one row and its queryset twin to another; every
concrete field of the two rows is then compared, value and type (JSON, aware datetimes, foreign keys),
on the database the tests run on (SQLite, and PostgreSQL with ``DATABASE_URL``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, models, transaction
from django.db.models.signals import post_save, pre_save
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import question_types as qt
from annotation.hits.sciq_question import _INSERT_PAIR, _SWAP, _TAKE
from annotation.models import Assignment, Passage, QAPair
from annotation.models.work import _SUBMIT
from annotation.sql_writes import SqlInsert, SqlUpdate
from tests.factories import make_assignment, make_batch, make_textbook, make_worker

pytestmark = pytest.mark.django_db


def _stored(obj: models.Model, *skip: str) -> dict[str, Any]:
    """Every concrete field as stored (read back), with its type and time zone, but the ones in ``skip``."""
    obj.refresh_from_db()
    return {
        f.attname: (type(v), getattr(v, "tzinfo", None), v)
        for f in obj._meta.concrete_fields
        if f.attname not in skip
        for v in [getattr(obj, f.attname)]
    }


def _two_assignments() -> tuple[Assignment, Assignment]:
    batch = make_batch()
    now = timezone.now()
    return (
        make_assignment(batch=batch, worker=make_worker("a"), accepted_at=now - timedelta(minutes=3)),
        make_assignment(batch=batch, worker=make_worker("b"), accepted_at=now - timedelta(minutes=3)),
    )


def test_submit_update__stores_what_the_queryset_update_stores() -> None:
    written, twin = _two_assignments()
    now = timezone.now()
    answers = {"passage": "12", "question": "What is “ATP”?\n", "answer": "énergie", "n": [1, 2.5, None]}
    values = ("submitted", answers, now, 181.25)
    assert _SUBMIT.run(values, (written.pk, "accepted")) == 1
    assert (
        Assignment.objects.filter(pk=twin.pk, status="accepted").update(
            status="submitted", answers=answers, submitted_at=now, time_on_task_seconds=181.25
        )
        == 1
    )
    skip = ("id", "hit_id", "worker_id")
    assert _stored(written, *skip) == _stored(twin, *skip)
    assert written.answers == answers and written.submitted_at == now
    assert _SUBMIT.run(values, (written.pk, "accepted")) == 0  # the condition no longer holds


def test_take_and_swap__store_what_the_queryset_updates_store() -> None:
    corpus = make_textbook("tb", ("First passage text.", "Second passage text."))
    first, second = Passage.objects.filter(corpus=corpus).order_by("pk")
    assignment = make_assignment(batch=make_batch(corpus=corpus))
    pair, other = (
        QAPair.objects.create(
            corpus=corpus,
            passage=first,
            assignment=assignment,
            position=i,
            question_type=qt.SCIQ,
            question="q?",
        )
        for i in range(2)
    )
    assert _TAKE.run((pair,), (first.pk,)) == 1
    assert Passage.objects.filter(pk=second.pk, used_by__isnull=True).update(used_by=pair) == 1
    assert _stored(first, "id", "position", "text", "text_sha256") == _stored(
        second, "id", "position", "text", "text_sha256"
    )
    assert _TAKE.run((other.pk,), (first.pk,)) == 0  # taken: the IS NULL condition holds no longer
    assert _SWAP.run((other.pk,), (first.pk, other.pk)) == 0  # not the holder
    assert _SWAP.run((other.pk,), (first.pk, pair.pk)) == 1
    first.refresh_from_db()
    assert first.used_by_id == other.pk


def test_sql_update__runs_one_statement_seen_by_query_capture() -> None:
    """One statement a call: on PostgreSQL the EXECUTE of the UPDATE prepared on the session."""
    written, _ = _two_assignments()
    with CaptureQueriesContext(connection) as queries:
        _SUBMIT.run(("submitted", {}, timezone.now(), 1.0), (written.pk, "accepted"))
    expected = (
        "EXECUTE crowdqa_" if connection.vendor == "postgresql" else 'UPDATE "annotation_assignment" SET'
    )
    assert len(queries) == 1 and queries[0]["sql"].startswith(expected)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'crowdqa_%%'")
            prepared = [statement for (statement,) in cursor.fetchall()]
        assert any(
            s.startswith("PREPARE crowdqa_") and 'UPDATE "annotation_assignment" SET' in s for s in prepared
        )


def test_sql_update__a_failing_statement_marks_the_atomic_block_for_rollback() -> None:
    assignment = make_assignment()
    breaking = SqlUpdate(Assignment, set_fields=("hit",), where=("id",))
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            breaking.run((None,), (assignment.pk,))  # hit is NOT NULL
        with pytest.raises(TransactionManagementError):
            Assignment.objects.count()


def test_sql_update__refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError, match="no column"):
        SqlUpdate(Passage, set_fields=("hits",), where=("id",))
    with pytest.raises(ValueError):
        _SUBMIT.run(("submitted",), (1, "accepted"))  # fewer values than fields


def _in_memory(obj: models.Model, *skip: str) -> dict[str, Any]:
    return {
        f.attname: (type(v), v)
        for f in obj._meta.concrete_fields
        if f.attname not in skip
        for v in [getattr(obj, f.attname)]
    }


def test_insert_pair__stores_and_returns_what_create_does() -> None:
    corpus = make_textbook("tb", ("First passage text.",))
    passage = Passage.objects.get(corpus=corpus)
    assignment = make_assignment(batch=make_batch(corpus=corpus))
    fields = {
        "corpus": corpus,
        "document_id": None,
        "passage_id": passage.pk,
        "assignment": assignment,
        "question_type": qt.SCIQ,
        "question": "What do “extremophiles” need?",
        "answer": "énergie",
        "normalized_answer": "energie",
        "status": QAPair.Status.PENDING,
        "qc_flags": ["answer_not_in_passage"],
        "qc_severity": {"answer_not_in_passage": "review"},
    }
    created = QAPair.objects.create(position=0, **fields)
    written = QAPair(position=1, **fields)
    _INSERT_PAIR.save(written)
    assert written.pk is not None and written.pk != created.pk
    assert not written._state.adding and written._state.db == "default"
    skip = ("id", "position", "created")
    assert _in_memory(written, *skip) == _in_memory(created, *skip)  # answer_source came back too
    assert written.created.tzinfo is not None and abs(written.created - created.created) < timedelta(
        minutes=1
    )
    assert _stored(written, *skip) == _stored(created, *skip)
    with pytest.raises(ValueError, match="not a new"):
        _INSERT_PAIR.save(written)


def test_insert_pair__nothing_listens_to_qapair_saves() -> None:
    """SqlInsert sends no signals: a receiver of QAPair's saves would miss the submissions' pairs."""
    assert not pre_save.has_listeners(QAPair) and not post_save.has_listeners(QAPair)


def test_sql_insert__a_failing_insert_marks_the_atomic_block_for_rollback() -> None:
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            SqlInsert(QAPair).save(QAPair(corpus_id=None, question_type=qt.SCIQ, question="q?"))
        with pytest.raises(TransactionManagementError):
            QAPair.objects.count()
