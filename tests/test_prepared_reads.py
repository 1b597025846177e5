"""A prepared read gives exactly what its queryset gives, compiled once per thread.

The comparison covers every concrete field of every model the signed link's read brings (JSON,
dates, nullable foreign keys), the consent annotation, the row lock and the HIT's passages, so a
Django upgrade that changes the compiler attributes :mod:`annotation.prepared_reads` relies on fails here.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection, connections, transaction
from django.db.models import Model
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from annotation.hits.sciq_question import _OFFERED
from annotation.models import HIT, Assignment, Passage
from annotation.prepared_reads import MARKER, PreparedRead, Unsupported
from crowd.models import Consent
from tests.factories import make_assignment, make_batch, make_document, make_textbook, make_worker
from tests.threads import run_in_threads, skip_unless_threads_share_the_database
from worker import hit_links

pytestmark = pytest.mark.django_db

RELATED = ("hit", "hit.batch", "hit.batch.corpus", "hit.document", "worker")


def _fields(obj: Model | None) -> dict[str, Any] | None:
    if obj is None:
        return None
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


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


def _assert_same(prepared: Assignment, plain: Assignment) -> None:
    assert _fields(prepared) == _fields(plain)
    assert prepared.has_consent == plain.has_consent
    for path in RELATED:
        assert _fields(_follow(prepared, path)) == _fields(_follow(plain, path)), path


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


def test_locked_read__takes_the_row_lock() -> None:
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        _assert_same(hit_links.assignment_for(token, lock=True), _plain(assignment.pk))
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in queries[0]["sql"]


@pytest.mark.django_db(transaction=True)
def test_locked_read__outside_a_transaction_is_refused_compiled_or_not() -> None:
    """A lock taken in autocommit would end with its statement; Django refuses it, and so do later calls."""
    if not connection.features.has_select_for_update:
        pytest.skip("SQLite has no row locks: its write transactions run one at a time")
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    with transaction.atomic():
        hit_links.assignment_for(token, lock=True)  # compiled in this thread
    with pytest.raises(TransactionManagementError):
        hit_links.assignment_for(token, lock=True)


def test_offered_passages__equal_the_related_manager_in_id_order() -> None:
    corpus = make_textbook("tb", [f"Passage number {i} about cells." for i in range(5)])
    batch = make_batch(corpus=corpus)
    hits = [HIT.objects.create(batch=batch, position=i) for i in range(2)]
    passages = list(Passage.objects.filter(corpus=corpus).order_by("-pk"))
    hits[0].passages.set(passages[:3])
    hits[1].passages.set(passages[3:])
    for hit in hits:
        assert [_fields(p) for p in _OFFERED.all(hit.pk)] == [_fields(p) for p in hit.passages.order_by("pk")]
    assert _OFFERED.all(-1) == []


@pytest.mark.django_db(transaction=True)
def test_each_thread_compiles_its_own_copy_on_its_own_connection() -> None:
    skip_unless_threads_share_the_database()
    assignment = _rich_assignment(with_document=False)
    token = hit_links.token_for(assignment)
    seen: list[Any] = []

    def read() -> None:
        try:
            found = hit_links.assignment_for(token)
            seen.append((found.pk, hit_links._READ._local.compiled.connection is connections["default"]))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            seen.append(exc)

    hit_links.assignment_for(token)
    run_in_threads(read, [(), ()])
    assert seen == [(assignment.pk, True), (assignment.pk, True)]  # each thread's own ``connection``


def test_open_value_must_be_one_parameter() -> None:
    twice = PreparedRead(lambda pk: Assignment.objects.filter(pk=pk, hit_id=pk))
    with pytest.raises(ValueError, match="one parameter"):
        twice.all(1)
    none = PreparedRead(lambda pk: Assignment.objects.all())
    with pytest.raises(ValueError, match="one parameter"):
        none.all(1)
    assert MARKER < 0  # never a primary key


@pytest.mark.parametrize(
    ("build", "feature"),
    [
        (lambda pk: Passage.objects.filter(hits=pk).prefetch_related("hits"), "prefetch_related"),
        (lambda pk: Passage.objects.filter(pk=pk).values("text"), "values()"),
        (lambda pk: Passage.objects.filter(pk=pk).values_list("text", flat=True), "values()"),
        (lambda pk: Passage.objects.filter(pk=pk).only("text"), "only()"),
        (lambda pk: Passage.objects.filter(pk=pk).defer("text"), "defer()"),
        (lambda pk: Passage.objects.filter(pk=pk).extra(select={"one": "1"}), "extra()"),
        (lambda pk: Passage.objects.filter(pk=pk).union(Passage.objects.filter(pk=pk)), "union()"),
        (lambda pk: Passage.objects.filter(pk=pk)[:1], "slicing"),
        (lambda pk: Passage.objects.using("other").filter(pk=pk), "using('other')"),
    ],
)
def test_queryset_features_it_does_not_reproduce__are_refused(build: Any, feature: str) -> None:
    with pytest.raises(Unsupported, match=re.escape(feature)):
        PreparedRead(build).all(1)


def test_related_manager_queryset__is_refused() -> None:
    assignment = make_assignment()
    hit = assignment.hit
    with pytest.raises(Unsupported, match="related manager"):
        PreparedRead(lambda pk: hit.assignments.filter(pk=pk)).all(assignment.pk)


def test_untested_django__fails_the_system_check(monkeypatch: pytest.MonkeyPatch) -> None:
    import django

    from annotation.checks import check_prepared_reads_django

    assert check_prepared_reads_django(None) == []
    monkeypatch.setattr(django, "VERSION", (6, 1, 0, "final", 0))
    errors = check_prepared_reads_django(None)
    assert [e.id for e in errors] == ["crowdqa.E020"] and errors[0].is_serious()
