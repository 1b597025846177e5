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
from annotation import sql_writes
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


def _pair_fields(corpus: Any, passage: Passage, assignment: Assignment) -> dict[str, Any]:
    return {
        "corpus": corpus,
        "passage_id": passage.pk,
        "assignment": assignment,
        "position": 0,
        "question_type": qt.SCIQ,
        "question": "What do “extremophiles” need?",
        "answer": "énergie",
        "status": QAPair.Status.PENDING,
        "qc_flags": [],
        "qc_severity": {},
    }


def test_insert_pair_taking_its_passage__stores_what_the_two_statements_store() -> None:
    """The pair's INSERT with the passage's take (one statement on PostgreSQL, two on SQLite) stores what
    the INSERT and then the take store, and says whether the take changed the passage."""
    corpus = make_textbook("tb", ("First passage text.", "Second passage text.", "Third passage text."))
    first, second, third = Passage.objects.filter(corpus=corpus).order_by("pk")
    assignment = make_assignment(batch=make_batch(corpus=corpus))
    together = QAPair(**_pair_fields(corpus, first, assignment))
    with CaptureQueriesContext(connection) as queries:
        assert _INSERT_PAIR.save(together, then_where=(first.pk,)) == 1
    assert len(queries) == (1 if connection.vendor == "postgresql" else 2)
    apart = QAPair(**_pair_fields(corpus, second, assignment))
    _INSERT_PAIR.save(apart)
    assert _TAKE.run((apart.pk,), (second.pk,)) == 1
    skip = ("id", "passage_id", "created")
    assert together.pk is not None and not together._state.adding
    assert _in_memory(together, *skip) == _in_memory(apart, *skip)
    assert _stored(together, *skip) == _stored(apart, *skip)
    assert _stored(first, "id", "position", "text", "text_sha256", "used_by_id") == _stored(
        second, "id", "position", "text", "text_sha256", "used_by_id"
    )
    assert (first.used_by_id, second.used_by_id) == (together.pk, apart.pk)
    # A passage already taken: the pair is stored, the take changes nothing and says so.
    late = QAPair(**_pair_fields(corpus, first, assignment))
    assert _INSERT_PAIR.save(late, then_where=(first.pk,)) == 0
    assert late.pk is not None and Passage.objects.get(pk=first.pk).used_by_id == together.pk
    # Without where values the INSERT runs alone and takes nothing.
    alone = QAPair(**_pair_fields(corpus, third, assignment))
    assert _INSERT_PAIR.save(alone) is None
    assert Passage.objects.get(pk=third.pk).used_by_id is None
    with pytest.raises(ValueError, match="no UPDATE"):
        SqlInsert(QAPair).bind(QAPair(**_pair_fields(corpus, third, assignment)), then_where=(third.pk,))


def test_writes_together__give_what_each_gives_alone_in_one_round_trip_on_postgresql() -> None:
    """An UPDATE, an INSERT with its UPDATE and an UPDATE that matches nothing, run together: each gives
    what it gives alone, and every one runs (a write that changed nothing does not stop the next)."""
    corpus = make_textbook("tb", ("First passage text.",))
    passage = Passage.objects.get(corpus=corpus)
    written, other = _two_assignments()
    pair = QAPair(**_pair_fields(corpus, passage, written))
    now = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        results = sql_writes.together(
            _SUBMIT.bind(("submitted", {"q": 1}, now, 2.0), (other.pk, "expired")),  # matches nothing
            _SUBMIT.bind(("submitted", {"q": 1}, now, 2.0), (written.pk, "accepted")),
            _INSERT_PAIR.bind(pair, then_where=(passage.pk,)),
        )
    assert results == [0, 1, 1]
    assert len(queries) == (1 if connection.vendor == "postgresql" else 4)
    assert Assignment.objects.get(pk=written.pk).status == "submitted"
    assert Assignment.objects.get(pk=other.pk).status == "accepted"
    assert Passage.objects.get(pk=passage.pk).used_by_id == pair.pk
    assert sql_writes.together() == []


def test_writes_together__a_failing_write_marks_the_atomic_block_for_rollback() -> None:
    written, _ = _two_assignments()
    breaking = SqlUpdate(Assignment, set_fields=("hit",), where=("id",))
    with transaction.atomic():
        with pytest.raises(IntegrityError):
            sql_writes.together(
                _SUBMIT.bind(("submitted", {}, timezone.now(), 1.0), (written.pk, "accepted")),
                breaking.bind((None,), (written.pk,)),  # hit is NOT NULL
            )
        with pytest.raises(TransactionManagementError):
            Assignment.objects.count()
    assert Assignment.objects.get(pk=written.pk).status == "accepted"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL: several statements in one query")
def test_writes_together__one_by_one_where_a_query_holds_one_statement(monkeypatch: Any) -> None:
    """With server-side binding (or psycopg2) a query string holds one statement: the writes run one by
    one, with the same results."""
    written, _ = _two_assignments()
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {"server_side_binding": True})
    with CaptureQueriesContext(connection) as queries:
        results = sql_writes.together(
            _SUBMIT.bind(("submitted", {}, timezone.now(), 1.0), (written.pk, "accepted")),
            _SUBMIT.bind(("submitted", {}, timezone.now(), 1.0), (written.pk, "accepted")),
        )
    assert results == [1, 0] and len(queries) == 2
