"""The local crowd: claiming HITs (race-safe), caps, time limits, returns, invites (services/assigning.py,
crowd/invites.py) and the worker pages."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import sql_prepared
from annotation.models import HIT, Assignment, Batch, Corpus, QAPair
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
from crowd.invites import InviteError, create_invites, find_invite, redeem
from crowd.models import Qualification, Worker
from tests.factories import make_corpus, make_document, make_textbook, make_worker
from tests.threads import run_in_threads, skip_unless_threads_share_the_database
from worker import assigning
from worker.assigning import ClaimRefused, claim_next, return_assignment

pytestmark = pytest.mark.django_db


def _textbook(n_passages: int) -> Corpus:
    return make_textbook(
        "tb",
        (
            f"Passage {i}: mitochondria release energy from glucose during cellular respiration."
            for i in range(n_passages)
        ),
    )


def _published(spec: BatchSpec) -> Batch:
    batch = create_batch(spec)
    batch.publish()
    return batch


def test_create_batch__sciq_hits_have_three_disjoint_passages() -> None:
    _textbook(10)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    groups = [set(h.passages.values_list("pk", flat=True)) for h in batch.hits.all()]
    assert len(groups) == 3 and all(len(g) == 3 for g in groups)
    assert len(set().union(*groups)) == 9
    # A second batch only gets what the first one does not show.
    with pytest.raises(BatchSpecError, match="9 of them are shown by the open HITs of") as refused:
        create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    # The hint names the batch holding the passages, not a filter run that would change nothing.
    assert f"'SciQ question writing: tb' (#{batch.pk})" in str(refused.value)
    assert "filter_passages" not in str(refused.value)


def test_create_batch__passage_hits_beside_syllabus_hits() -> None:
    """HITs without passages (syllabus HITs) must not hide every passage (NULL in NOT IN)."""
    make_document(make_corpus(name="syl"), name="bio101")
    create_batch(BatchSpec(kind="syllabus_qa", corpus="syl"))
    _textbook(3)
    assert create_batch(BatchSpec(kind="sciq_question", corpus="tb")).hits.count() == 1


def test_create_batch__unknown_corpus_and_document() -> None:
    with pytest.raises(BatchSpecError, match="no corpus named 'nope'"):
        create_batch(BatchSpec(kind="syllabus_qa", corpus="nope"))
    make_document(make_corpus(name="syl"), name="bio101")
    with pytest.raises(BatchSpecError, match="no document named 'chem'"):
        create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", documents=("chem",)))


def test_claim_next__resumes_then_gives_distinct_hits() -> None:
    _textbook(6)
    batch = _published(BatchSpec(kind="sciq_question", corpus="tb"))
    a, b = make_worker("a"), make_worker("b")
    first = claim_next(batch, a)
    assert claim_next(batch, a).pk == first.pk  # resumed, not a second HIT
    second = claim_next(batch, b)
    assert first.hit_id != second.hit_id
    with pytest.raises(ClaimRefused, match="no HIT left"):
        claim_next(batch, make_worker("c"))


def test_claim_next__draft_batch_and_blocked_worker_refused() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl"))
    with pytest.raises(ClaimRefused, match="draft"):
        claim_next(batch, make_worker("a"))
    batch.publish()
    with pytest.raises(ClaimRefused, match="cannot take HITs"):
        claim_next(batch, make_worker("b", blocked=True))


def test_claim_next__required_qualification_from_screening() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    batch = _published(
        BatchSpec(kind="syllabus_qa", corpus="syl", options={"required_qualification": "screened"})
    )
    worker = make_worker("a")
    with pytest.raises(ClaimRefused, match="screening"):
        claim_next(batch, worker)
    Qualification.objects.create(worker=worker, name="screened")
    assert claim_next(batch, worker).hit.batch_id == batch.pk


def test_claim_next__pair_cap_per_worker() -> None:
    corpus = make_corpus(name="syl")
    make_document(corpus, name="d1")
    make_document(corpus, name="d2")
    batch = _published(BatchSpec(kind="syllabus_qa", corpus="syl", max_pairs_per_worker=20))
    worker = make_worker("a")
    first = claim_next(batch, worker)
    first.submit({})
    QAPair.objects.bulk_create(
        QAPair(
            corpus=corpus,
            document=first.hit.document,
            assignment=first,
            position=i,
            question_type="yes/no",
            question=f"Question {i}?",
            answer="Yes",
        )
        for i in range(14)
    )
    with pytest.raises(ClaimRefused, match="maximum number of QA pairs"):
        claim_next(batch, worker)  # 14 written + 14 more would pass the cap of 20
    assert claim_next(batch, make_worker("b")).hit_id != first.hit_id


def test_claim_next__expired_assignment_frees_the_slot() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    batch = _published(BatchSpec(kind="syllabus_qa", corpus="syl", time_limit_minutes=90))
    first = claim_next(batch, make_worker("a"))
    Assignment.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    other = claim_next(batch, make_worker("b"))
    first.refresh_from_db()
    assert first.status == Assignment.Status.EXPIRED
    assert other.hit_id == first.hit_id


def test_claim_next__expires_only_the_taken_hits_overdue_assignment() -> None:
    """Other overdue assignments are the periodic job's: a claim touches the HIT it takes, not the batch."""
    _textbook(9)
    batch = _published(BatchSpec(kind="sciq_question", corpus="tb", time_limit_minutes=30))
    first, second = claim_next(batch, make_worker("a")), claim_next(batch, make_worker("b"))
    Assignment.objects.filter(pk__in=[first.pk, second.pk]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    taken = claim_next(batch, make_worker("c"))
    assert taken.hit_id == first.hit_id  # the first free HIT in position order
    statuses = dict(Assignment.objects.filter(pk__in=[first.pk, second.pk]).values_list("pk", "status"))
    assert statuses == {first.pk: Assignment.Status.EXPIRED, second.pk: Assignment.Status.ACCEPTED}


def _claim_queries(n_hits: int, taken: int) -> list[str]:
    """SQL of one claim in a stage-2 batch of ``n_hits`` HITs whose first ``taken`` HITs are held."""
    corpus = make_corpus(name=f"q{n_hits}", kind=Corpus.Kind.TEXTBOOK)
    batch = Batch.objects.create(name=f"b{n_hits}", kind=Batch.Kind.SCIQ_DISTRACTOR, corpus=corpus)
    HIT.objects.bulk_create(HIT(batch=batch, position=i) for i in range(n_hits))
    batch.publish()
    for i in range(taken):
        claim_next(batch, make_worker(f"t{n_hits}-{i}"))
    worker = make_worker(f"asker{n_hits}")
    with CaptureQueriesContext(connection) as ctx:
        claim_next(batch, worker)
    return [q["sql"] for q in ctx.captured_queries]


def test_claim_next__one_indexed_pick_whatever_the_batch_size() -> None:
    """A claim locks one free HIT with a LIMIT 1 read; it never lists the batch's HITs."""
    small, large = _claim_queries(5, 2), _claim_queries(60, 2)
    assert len(small) == len(large)
    pick = assigning._free_hit_read(wait=False, passed=0).sql(connection)
    outer_limit = re.compile(r" ORDER BY [^()]* LIMIT 1( FOR UPDATE OF t0 SKIP LOCKED)?$")
    assert outer_limit.search(pick), pick
    if connection.vendor == "postgresql":
        assert pick.endswith(" FOR UPDATE OF t0 SKIP LOCKED")
    # what the claim sends for it: the prepared statement's EXECUTE on PostgreSQL, the SQL elsewhere
    sent = sql_prepared.statement(connection, pick)
    head = sent.split("(")[0] if sent.startswith("EXECUTE") else sent.split(" WHERE ")[0]
    assert [q for q in large if q.startswith(head)], large
    # besides it, the HIT is read only by its key (its slots re-counted under the lock)
    by_key = re.compile(r'WHERE t0\."id" = \d+$')
    other_hit_selects = [
        q
        for q in large
        if 'FROM "annotation_hit"' in q
        and not q.startswith(head)
        and " LIMIT " not in q
        and not by_key.search(q)
    ]
    assert not other_hit_selects


def test_return_assignment__slot_goes_to_someone_else() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    batch = _published(BatchSpec(kind="syllabus_qa", corpus="syl"))
    first = claim_next(batch, make_worker("a"))
    return_assignment(first)
    assert claim_next(batch, make_worker("b")).hit_id == first.hit_id
    with pytest.raises(ClaimRefused):
        claim_next(batch, make_worker("a"))  # one assignment per worker per HIT, even after a return


@pytest.mark.django_db(transaction=True)
def test_claim_next__concurrent_workers_get_different_passages() -> None:
    """Eight workers ask at the same instant for four HITs: four win, each a different HIT."""
    skip_unless_threads_share_the_database()
    _textbook(12)
    batch = _published(BatchSpec(kind="sciq_question", corpus="tb"))
    workers = [make_worker(f"w{i}") for i in range(8)]
    barrier = threading.Barrier(len(workers))
    won: list[int] = []
    refused: list[str] = []
    lock = threading.Lock()

    def ask(worker) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            assignment = claim_next(batch, worker)
            with lock:
                won.append(assignment.hit_id)
        except ClaimRefused as exc:
            with lock:
                refused.append(str(exc))

    run_in_threads(ask, ((w,) for w in workers))
    assert len(won) == 4 and len(set(won)) == 4, (won, refused)
    assert len(refused) == 4
    passages = [
        p for hit in HIT.objects.filter(pk__in=won) for p in hit.passages.values_list("pk", flat=True)
    ]
    assert len(passages) == len(set(passages)) == 12


def test_invites__one_time_and_tied_to_batch() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    batch = _published(BatchSpec(kind="syllabus_qa", corpus="syl"))
    issued = create_invites(2, batch=batch, label="lab", base_url="http://testserver")
    assert len({i.url for i in issued}) == 2
    token = issued[0].url.rstrip("/").rsplit("/", 1)[1]
    assert issued[0].invite.token_sha256 != token  # only the hash is stored
    worker = redeem(token)
    assert worker.platform == "local" and worker.user is not None and not worker.user.has_usable_password()
    with pytest.raises(InviteError, match="already been used"):
        find_invite(token)
    with pytest.raises(InviteError, match="not valid"):
        find_invite("forged")


def test_worker_pages__invite_login_next_and_home(client) -> None:  # type: ignore[no-untyped-def]
    make_document(make_corpus(name="syl"), name="bio101")
    batch = _published(BatchSpec(kind="syllabus_qa", corpus="syl"))
    url = create_invites(1, base_url="http://testserver")[0].url.replace("http://testserver", "")
    assert client.get(url).status_code == 200  # a GET (a link preview) does not use the invite
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == "/work/"
    Batch.objects.filter(pk=batch.pk).update(reward_cents=75, currency="EUR")
    home = client.get("/work/").content.decode()
    assert batch.title in home and "0.75 EUR each" in home
    worker = Worker.objects.get(user__isnull=False)
    assert f"Worker <strong>{worker.pseudonym}</strong>" in home and worker.user.username not in home
    assert "Signed in as" not in home and 'href="/batches/new/"' not in home  # no researcher bar
    response = client.post(f"/work/batches/{batch.pk}/next/")
    assert response.status_code == 302 and response["Location"].startswith("/a/")
    assert Assignment.objects.filter(hit__batch=batch).count() == 1
    assert "Continue" in client.get("/work/").content.decode()
    assert client.post(url).status_code == 410  # the link is spent
