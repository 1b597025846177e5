"""A read written as SQL (:mod:`annotation.sql_reads`) gives exactly what its queryset gives.

The comparison covers every concrete field of every model the signed link's read brings (JSON,
aware datetimes, booleans, nullable foreign keys), value and type, the consent annotation, the row
lock and the HIT's passages, on the database the tests run on (SQLite, and PostgreSQL with
``DATABASE_URL``): a model field, a Django upgrade or a driver that changes what the database returns
fails here.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import OperationalError, connection, models, transaction
from django.db.models import Model
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation import hit_passages
from annotation.models import HIT, Assignment, Batch, Passage
from annotation.sql_reads import SqlRead, _converter, together
from crowd.models import Consent, Worker
from tests.factories import make_assignment, make_batch, make_document, make_textbook, make_worker
from tests.threads import run_in_threads, skip_unless_threads_share_the_database
from worker import hit_links

pytestmark = pytest.mark.django_db

RELATED = ("hit", "hit.batch", "hit.batch.corpus", "hit.document", "worker")


def _fields(obj: Model | None) -> dict[str, Any] | None:
    """Every concrete field's value, with its type and (datetimes) its time zone, so 1 != True here."""
    if obj is None:
        return None
    return {
        f.attname: (type(v), getattr(v, "tzinfo", None), v)
        for f in obj._meta.concrete_fields
        for v in [getattr(obj, f.attname)]
    }


def _follow(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name) if obj is not None else None
    return obj


def _plain(pk: int) -> Assignment:
    """The read as an ordinary queryset, evaluated by Django."""
    from django.db.models import Exists, OuterRef

    consent = Consent.objects.filter(worker=OuterRef("worker_id"), batch=OuterRef("hit__batch_id"))
    return (
        Assignment.objects.select_related("hit__batch__corpus", "hit__document", "worker")
        .annotate(has_consent=Exists(consent))
        .get(pk=pk)
    )


def _assert_same(read: Assignment, plain: Assignment) -> None:
    assert _fields(read) == _fields(plain)
    assert type(read.has_consent) is bool and read.has_consent == plain.has_consent
    for path in RELATED:
        assert _fields(_follow(read, path)) == _fields(_follow(plain, path)), path


def _rich_assignment(with_document: bool) -> Assignment:
    batch = make_batch(
        options={
            "completion_code": "C0DE",
            "locales": ["de", "fr"],
            "prolific_filters": [{"filter_id": "age", "selected_range": {"lower": 18}}],
        },
        description="é\u2028x",
    )
    document = make_document(corpus=batch.corpus, metadata={"course": "CS 101"}) if with_document else None
    hit = HIT.objects.create(batch=batch, position=0, document=document)
    return make_assignment(
        batch=batch,
        hit=hit,
        worker=make_worker("w-rich"),
        draft={"question": "Wie heißt das?", "list": [1, None, True]},
        draft_revisions={"question": 3},
        platform_meta={"turk_submit_to": "https://workersandbox.mturk.com"},
    )


@pytest.mark.parametrize("with_document", [True, False])
def test_link_read__equals_the_plain_queryset_field_for_field(with_document: bool) -> None:
    assignment = _rich_assignment(with_document)
    token = hit_links.token_for(assignment)
    _assert_same(hit_links.assignment_for(token), _plain(assignment.pk))
    Consent.objects.create(worker=assignment.worker, batch=assignment.hit.batch)
    read = hit_links.assignment_for(token)
    assert read.has_consent is True
    _assert_same(read, _plain(assignment.pk))
    assert (read.hit.document is None) is not with_document


def test_link_read__instances_behave_as_loaded_ones() -> None:
    """Saved, refreshed and related like any instance: from_db marks them as coming from the database."""
    assignment = _rich_assignment(with_document=True)
    read = hit_links.assignment_for(hit_links.token_for(assignment))
    assert read._state.adding is False and read._state.db == "default"
    with CaptureQueriesContext(connection) as queries:
        assert read.hit.batch.corpus.pk == assignment.hit.batch.corpus_id
        assert read.worker.platform_id == "w-rich"
    assert len(queries) == 0  # everything came with the one statement
    read.save_draft({"question": "Neu?"}, {"question": 4})
    assert Assignment.objects.get(pk=assignment.pk).draft["question"] == "Neu?"


def test_link_read__unknown_id_is_404_and_one_statement_per_read() -> None:
    from django.http import Http404

    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    hit_links.assignment_for(token)
    with CaptureQueriesContext(connection) as queries:
        hit_links.assignment_for(token)
    assert len(queries) == 1 and str(assignment.pk) in queries[0]["sql"]
    assignment.delete()
    with pytest.raises(Http404):
        hit_links.assignment_for(token)


def test_locked_read__equals_the_plain_queryset() -> None:
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    with transaction.atomic():
        _assert_same(hit_links.assignment_for(token, lock=True), _plain(assignment.pk))


@pytest.mark.django_db(transaction=True)
def test_locked_read__locks_the_assignment_row_only() -> None:
    """Another session cannot lock the assignment meanwhile, but can lock its HIT, batch and worker."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no row locks: its write transactions run one at a time")
    assignment = _rich_assignment(with_document=True)
    token = hit_links.token_for(assignment)
    held, done = threading.Event(), threading.Event()
    found: dict[str, bool] = {}

    def holder() -> None:
        with transaction.atomic():
            hit_links.assignment_for(token, lock=True)
            held.set()
            done.wait(timeout=30)

    def other() -> None:
        held.wait(timeout=30)
        for name, rows in [
            ("assignment", Assignment.objects.filter(pk=assignment.pk)),
            ("hit", HIT.objects.filter(pk=assignment.hit_id)),
            ("batch", Batch.objects.filter(pk=assignment.hit.batch_id)),
            ("worker", Worker.objects.filter(pk=assignment.worker_id)),
        ]:
            try:
                with transaction.atomic():
                    list(rows.select_for_update(nowait=True))
                found[name] = True
            except OperationalError:
                found[name] = False
        done.set()

    run_in_threads(lambda role: role(), [(holder,), (other,)])
    assert found == {"assignment": False, "hit": True, "batch": True, "worker": True}


def _prepared_here() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE 'crowdqa_%%'")
        return {name for (name,) in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_postgresql_plans_the_read_once_per_session() -> None:
    """The read is prepared once per connection, then executed by name: one statement per read."""
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL prepared statement")
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    connection.close()
    assert _prepared_here() == set()  # a new session
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            _assert_same(hit_links.assignment_for(token), _plain(assignment.pk))
        assert [q["sql"].split()[0] for q in queries][:1] == ["EXECUTE"]
        assert len(_prepared_here()) == 1
    connection.close()
    assert _prepared_here() == set()
    hit_links.assignment_for(token)  # prepared again in the new session
    assert len(_prepared_here()) == 1


@pytest.mark.django_db(transaction=True)
def test_locked_read__outside_a_transaction_is_refused() -> None:
    """A lock taken in autocommit would end with its statement: refused, as select_for_update() is."""
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    with transaction.atomic():
        hit_links.assignment_for(token, lock=True)
    with pytest.raises(TransactionManagementError):
        hit_links.assignment_for(token, lock=True)


def test_offered_passages__equal_the_related_manager_in_id_order() -> None:
    corpus = make_textbook("tb", [f"Passage number {i} about cells." for i in range(5)])
    batch = make_batch(corpus=corpus)
    hits = [HIT.objects.create(batch=batch, position=i) for i in range(2)]
    passages = list(Passage.objects.filter(corpus=corpus).order_by("-pk"))
    Passage.objects.filter(pk=passages[0].pk).update(filter_reasons=["short", {"n": 1}])
    hits[0].passages.set(passages[:3])
    hits[1].passages.set(passages[3:])
    for hit in hits:
        expected = [_fields(p) for p in hit.passages.order_by("pk")]
        assert [_fields(p) for p in hit_passages.offered(hit)] == expected
        assignment = make_assignment(batch=batch, hit=hit, worker=make_worker(f"w{hit.pk}"))
        assert [_fields(p) for p in hit_passages.BY_ASSIGNMENT.all(assignment.pk)] == expected
    assert hit_passages.BY_HIT.all(-1) == [] and hit_passages.BY_ASSIGNMENT.all(-1) == []


def _passage_hit() -> tuple[HIT, Assignment]:
    corpus = make_textbook("tb", [f"Passage number {i} about cells." for i in range(3)])
    batch = make_batch(corpus=corpus)
    hit = HIT.objects.create(batch=batch, position=0)
    hit.passages.set(Passage.objects.filter(corpus=corpus).order_by("-pk"))
    return hit, make_assignment(batch=batch, hit=hit, worker=make_worker("w-passages"))


def test_link_read_with_passages__keeps_them_on_the_hit_in_one_round_trip() -> None:
    """On PostgreSQL the link and the HIT's passages come in one round trip (two statements in one
    query string); elsewhere one after the other. The passages are those of the related manager, and
    the page's and the submission's reads of them read nothing more."""
    hit, assignment = _passage_hit()
    token = hit_links.token_for(assignment)
    hit_links.assignment_for(token, passages=True)  # prepared in this session
    with CaptureQueriesContext(connection) as queries:
        read = hit_links.assignment_for(token, passages=True)
    assert len(queries) == (1 if connection.vendor == "postgresql" else 2)
    _assert_same(read, _plain(assignment.pk))
    expected = [_fields(p) for p in hit.passages.order_by("pk")]
    with CaptureQueriesContext(connection) as queries:
        assert [_fields(p) for p in hit_passages.offered(read.hit)] == expected
    assert len(queries) == 0
    with CaptureQueriesContext(connection) as queries:
        assert [_fields(p) for p in hit_passages.offered(hit_links.assignment_for(token).hit)] == expected
    assert len(queries) == 2  # without ``passages`` they are read when asked for


def test_together__gives_what_each_read_gives_alone() -> None:
    """Reads run together find what each finds alone, in the order given, empty results included."""
    hit, assignment = _passage_hit()
    link = SqlRead(Assignment, related=("hit__batch", "worker"), where='{self}."id" = %s')
    reads = [
        (link, (assignment.pk,)),
        (hit_passages.BY_HIT, (hit.pk,)),
        (hit_passages.BY_HIT, (-1,)),
        (link, (assignment.pk,)),
    ]
    alone = [read.all(*params) for read, params in reads]
    found = together(*reads)
    assert [[_fields(o) for o in result] for result in found] == [
        [_fields(o) for o in result] for result in alone
    ]
    assert _fields(found[0][0].hit.batch) == _fields(alone[0][0].hit.batch)
    assert together() == []
    with pytest.raises(TypeError):
        together((hit_passages.BY_HIT, ()), (link, (assignment.pk,)))


@pytest.mark.parametrize("why", ["server-side binding", "psycopg2"])
def test_together__runs_the_reads_one_after_another_where_one_query_cannot_hold_them(
    why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Server-side binding takes one statement per query, and psycopg2's cursors (like SQLite's) keep
    only the last result: the reads then go one by one and still give what each gives alone."""
    hit, assignment = _passage_hit()
    alone = [_fields(p) for p in hit_passages.BY_ASSIGNMENT.all(assignment.pk)]
    if why == "server-side binding":
        options = {**connection.settings_dict.get("OPTIONS", {}), "server_side_binding": True}
        monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    else:
        monkeypatch.setattr(connection.Database, "__name__", "psycopg2")
    with CaptureQueriesContext(connection) as queries:
        found = together((hit_passages.BY_HIT, (hit.pk,)), (hit_passages.BY_ASSIGNMENT, (assignment.pk,)))
    assert len(queries) == 2
    assert [[_fields(p) for p in result] for result in found] == [alone, alone]


@pytest.mark.django_db(transaction=True)
def test_together__a_locked_read_outside_a_transaction_is_refused_before_anything_is_sent() -> None:
    hit, assignment = _passage_hit()
    locked = SqlRead(Assignment, where='{self}."id" = %s', lock=True)
    with CaptureQueriesContext(connection) as queries, pytest.raises(TransactionManagementError):
        together((locked, (assignment.pk,)), (hit_passages.BY_HIT, (hit.pk,)))
    assert len(queries) == 0


@pytest.mark.django_db(transaction=True)
def test_reads_in_other_threads__use_their_own_connection() -> None:
    skip_unless_threads_share_the_database()
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    seen: list[Any] = []

    def read() -> None:
        try:
            seen.append(hit_links.assignment_for(token).pk)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            seen.append(exc)

    run_in_threads(read, [(), ()])
    assert seen == [assignment.pk, assignment.pk]


def test_get__none_or_several_rows_raise_the_models_exceptions() -> None:
    assignment = make_assignment()
    read = SqlRead(Assignment, where='{self}."hit_id" = %s')
    with pytest.raises(Assignment.DoesNotExist):
        read.get(-1)
    Assignment.objects.create(hit=assignment.hit, worker=make_worker("w2"))
    with pytest.raises(Assignment.MultipleObjectsReturned):
        read.get(assignment.hit_id)
    assert sorted(a.pk for a in read.all(assignment.hit_id)) == sorted(
        Assignment.objects.filter(hit=assignment.hit).values_list("pk", flat=True)
    )


@pytest.mark.parametrize(
    "field",
    [
        models.DecimalField(max_digits=5, decimal_places=2),
        models.UUIDField(),
        models.DurationField(),
        models.TimeField(),
        models.DateField(),
        models.BinaryField(),
    ],
)
def test_fields_the_backend_converts_otherwise__are_refused(field: models.Field) -> None:
    with pytest.raises(ValueError, match="does not convert"):
        _converter(field, "default")


def test_related_path_that_is_not_a_forward_key__is_refused() -> None:
    with pytest.raises(ValueError, match="forward foreign key"):
        SqlRead(HIT, where="1 = 1", related=("assignments",))


@pytest.mark.django_db(transaction=True)
def test_together__on_a_new_session_prepares_each_read_then_sends_them_in_one_query() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL prepared statements, several in one query")
    hit, assignment = _passage_hit()
    token = hit_links.token_for(assignment)
    expected = sorted(p.pk for p in hit.passages.all())
    connection.close()  # not connected, as a fresh web worker's first request finds it
    read = hit_links.assignment_for(token, passages=True)
    assert [p.pk for p in hit_passages.offered(read.hit)] == expected
    assert len(_prepared_here()) == 2
    with CaptureQueriesContext(connection) as queries:
        read = hit_links.assignment_for(token, passages=True)
    assert [q["sql"].count("EXECUTE") for q in queries] == [2]
    assert [p.pk for p in hit_passages.offered(read.hit)] == expected
    assert len(_prepared_here()) == 2
