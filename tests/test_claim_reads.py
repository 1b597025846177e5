"""The claim's reads written as SQL (:mod:`worker.assigning`, :mod:`worker.admission`) give exactly
what their querysets give.

A claim picks the first free HIT of a batch with one statement written once (``_free_hit_read``) and
first looks for the worker's open assignment with another (``_CURRENT``); under the HIT's lock it
counts the HIT's held slots and looks for the worker's own question (``admission._SLOTS``), and a
local worker's invite is looked up first (``admission._INVITE``). Here each is compared with the
queryset it stands for, over HITs in every state that decides whether a slot is free (open, full,
held by an overdue, returned, expired or unconfirmed session, closed, the worker's own, the QA pair
the worker wrote, another batch's) and invites of every kind, on the database the tests run on
(SQLite, and PostgreSQL with ``DATABASE_URL``): a model field, a status or a Django upgrade that
changes the meaning fails here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, Exists, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch, QAPair
from crowd.models import Invite, Worker
from tests.factories import make_batch, make_corpus, make_worker
from worker import admission, assigning

pytestmark = pytest.mark.django_db

Status = Assignment.Status


def _plain_free_hits(batch: Batch, worker: Worker, passed: list[int]) -> list[int]:
    """The free HITs in claim order, as the queryset the read stands for finds them."""
    now = timezone.now()
    holding = (
        Assignment.objects.filter(hit=OuterRef("pk"))
        .live()
        .vouched()
        .filter(~Q(status=Status.ACCEPTED) | Q(expires_at__isnull=True) | Q(expires_at__gte=now))
        .order_by()
        .values("hit")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return list(
        HIT.objects.filter(batch=batch, status=HIT.Status.OPEN)
        .annotate(n_holding=Coalesce(Subquery(holding), 0))
        .filter(n_holding__lt=F("max_assignments"))
        .exclude(Exists(Assignment.objects.filter(hit=OuterRef("pk"), worker=worker)))
        .exclude(Exists(QAPair.objects.filter(pk=OuterRef("qa_pair_id"), assignment__worker=worker)))
        .exclude(pk__in=passed)
        .order_by("position")
        .values_list("pk", flat=True)
    )


def _picked_in_turn(batch: Batch, worker: Worker, wait: bool) -> list[int]:
    """Every HIT the read picks, each time passing over the ones picked before (as refusals do)."""
    picked: list[int] = []
    with transaction.atomic():
        while (hit := assigning._lock_free_hit(batch, worker, picked, wait)) is not None:
            assert hit.pk not in picked
            picked.append(hit.pk)
    return picked


def _hit(batch: Batch, position: int, **kw: Any) -> HIT:
    return HIT.objects.create(batch=batch, position=position, **kw)


def _session(hit: HIT, worker: Worker, status: str = Status.ACCEPTED, **kw: Any) -> Assignment:
    kw.setdefault("expires_at", timezone.now() + timedelta(hours=1))
    return Assignment.objects.create(hit=hit, worker=worker, status=status, **kw)


def _batch_in_every_state() -> tuple[Batch, Worker]:
    """A batch whose HITs cover every case of "free for this worker", in shuffled positions."""
    corpus = make_corpus(name="claims")
    batch = make_batch(corpus, name="claims")
    asker, other = make_worker("asker"), make_worker("other")
    past = timezone.now() - timedelta(minutes=5)
    _hit(batch, 7)  # free
    _session(_hit(batch, 3), other)  # full: a live session of another worker
    _session(_hit(batch, 11), other, expires_at=past)  # free: the session is overdue
    _session(_hit(batch, 1), other, expires_at=None)  # full: no time limit
    _session(_hit(batch, 5), other, Status.RETURNED)  # free
    _session(_hit(batch, 9), other, Status.EXPIRED)  # free
    _session(_hit(batch, 2), other, vouched=False)  # free: the platform has not vouched for it
    _session(_hit(batch, 12), other, Status.SUBMITTED)  # full
    _session(_hit(batch, 4, max_assignments=2), other, Status.SUBMITTED)  # free: one of two slots
    _session(_hit(batch, 13, max_assignments=2), other, Status.APPROVED)  # free
    _hit(batch, 0, status=HIT.Status.COMPLETED)  # closed
    _session(_hit(batch, 6), asker, Status.RETURNED)  # the asker's own (returned) session: never again
    written = _session(_hit(make_batch(corpus, name="stage 1"), 0), asker, Status.SUBMITTED)
    pair = QAPair.objects.create(
        corpus=batch.corpus, assignment=written, question_type="single factual", question="Q?", answer="A"
    )
    _hit(batch, 8, qa_pair=pair)  # validating the asker's own QA pair: never
    others = QAPair.objects.create(
        corpus=batch.corpus,
        assignment=_session(_hit(make_batch(corpus, name="stage 1b"), 0), other, Status.SUBMITTED),
        question_type="single factual",
        question="Q2?",
        answer="B",
    )
    _hit(batch, 10, qa_pair=others)  # free: another worker's pair
    _hit(make_batch(corpus, name="elsewhere"), 0)  # another batch
    return batch, asker


@pytest.mark.parametrize("wait", [False, True])
def test_free_hit_read__picks_what_the_queryset_finds_in_its_order(wait: bool) -> None:
    batch, asker = _batch_in_every_state()
    expected = _plain_free_hits(batch, asker, [])
    assert [HIT.objects.get(pk=pk).position for pk in expected] == [2, 4, 5, 7, 9, 10, 11, 13]
    assert _picked_in_turn(batch, asker, wait) == expected
    with transaction.atomic():
        hit = assigning._lock_free_hit(batch, asker, expected[:2], wait)
    assert hit is not None and hit.pk == _plain_free_hits(batch, asker, expected[:2])[0]


def test_free_hit_read__says_which_hits_hold_an_overdue_session() -> None:
    batch, asker = _batch_in_every_state()
    overdue = set(
        Assignment.objects.overdue().filter(hit__batch=batch).values_list("hit__position", flat=True)
    )
    assert overdue == {11}
    seen = {}
    with transaction.atomic():
        picked: list[int] = []
        while (hit := assigning._lock_free_hit(batch, asker, picked, wait=False)) is not None:
            picked.append(hit.pk)
            seen[hit.position] = hit.has_overdue
    assert seen == {position: position in overdue for position in seen} and seen[11] is True


def test_free_hit_read__instances_equal_the_models_own() -> None:
    batch, asker = _batch_in_every_state()
    with transaction.atomic():
        hit = assigning._lock_free_hit(batch, asker, [], wait=False)
    assert hit is not None and hit._state.adding is False
    plain = HIT.objects.get(pk=hit.pk)
    assert {f.attname: getattr(hit, f.attname) for f in HIT._meta.concrete_fields} == {
        f.attname: getattr(plain, f.attname) for f in HIT._meta.concrete_fields
    }


def test_free_hit_read__none_once_every_free_hit_is_passed_over() -> None:
    batch, asker = _batch_in_every_state()
    free = _plain_free_hits(batch, asker, [])
    with transaction.atomic():
        assert assigning._lock_free_hit(batch, asker, free, wait=False) is None
    if connection.vendor == "postgresql":
        assert assigning._free_hit_read(wait=False, passed=8).sql(connection).endswith(" SKIP LOCKED")
        assert assigning._free_hit_read(wait=True, passed=8).sql(connection).endswith(" FOR UPDATE OF t0")


def test_current_assignment__equals_the_queryset_with_its_hit() -> None:
    corpus = make_corpus(name="current")
    batch = make_batch(corpus, name="current")
    worker, other = make_worker("cw"), make_worker("co")
    _session(_hit(batch, 0), worker, Status.SUBMITTED)
    _session(_hit(batch, 1), other)
    _session(_hit(make_batch(corpus, name="other batch"), 0), worker)
    assert assigning.current_assignment(batch, worker) is None
    mine = _session(_hit(batch, 2), worker)
    found = assigning.current_assignment(batch, worker)
    plain = (
        Assignment.objects.filter(hit__batch=batch, worker=worker, status=Status.ACCEPTED)
        .select_related("hit")
        .get()
    )
    assert found is not None and found.pk == mine.pk == plain.pk
    for obj, ref in ((found, plain), (found.hit, plain.hit)):
        fields = obj._meta.concrete_fields
        assert {f.attname: getattr(obj, f.attname) for f in fields} == {
            f.attname: getattr(ref, f.attname) for f in fields
        }


def test_current_assignment__an_overdue_one_is_expired_not_resumed() -> None:
    batch = make_batch(name="overdue")
    worker = make_worker("ow")
    late = _session(_hit(batch, 0), worker, expires_at=timezone.now() - timedelta(seconds=1))
    assert assigning.current_assignment(batch, worker) is None
    late.refresh_from_db()
    assert late.status == Status.EXPIRED


def test_slots_read__held_slots_and_own_question_equal_the_querysets() -> None:
    batch, asker = _batch_in_every_state()
    other = Worker.objects.get(platform_id="other")
    gone = (Status.RETURNED.value, Status.EXPIRED.value)
    seen = []
    for hit in HIT.objects.all():
        for worker in (asker, other):
            read = admission._SLOTS.get(*gone, True, worker.pk, hit.pk)
            own = QAPair.objects.filter(pk=hit.qa_pair_id, assignment__worker=worker).exists()
            assert (read.pk, read.held_slots, read.own_question) == (hit.pk, hit.live_assignment_count(), own)
            seen.append((read.held_slots, read.own_question))
    # every case occurs: HITs holding none, one or two slots, and a question each worker wrote
    assert {held for held, _ in seen} == {0, 1} and sum(own for _, own in seen) == 2
    two = _hit(batch, 20, max_assignments=3)
    _session(two, asker), _session(two, other)
    assert admission._SLOTS.get(*gone, True, asker.pk, two.pk).held_slots == 2 == two.live_assignment_count()


def test_hit_refusal__under_the_lock_gives_the_reasons_of_the_querysets() -> None:
    batch, asker = _batch_in_every_state()
    by_position = {hit.position: hit for hit in batch.hits.all()}
    with transaction.atomic():
        assert admission.hit_refusal(batch, asker, by_position[3]) == "This HIT has no free slot left."
        assert (
            admission.hit_refusal(batch, asker, by_position[8]) == "You cannot validate a question you wrote."
        )
        assert admission.hit_refusal(batch, asker, by_position[0]) == "This HIT is closed."
        for position in (2, 4, 5, 7, 9, 10, 13):
            assert admission.hit_refusal(batch, asker, by_position[position]) is None, position


def _plain_invited(batch: Batch, worker: Worker) -> bool:
    named = Q(batch=batch) | Q(batch__isnull=True)
    if batch.parent_id is not None:
        named |= Q(batch=batch.parent_id)
    invites = Invite.objects.filter(worker=worker).filter(named)
    if batch.kind == Batch.Kind.EXPERT_ANSWER:
        return worker.is_expert and invites.filter(is_expert=True).exists()
    return invites.exists()


@pytest.mark.parametrize(
    "invites",
    [
        (),
        (("parent", False),),
        (("child", False),),
        ((None, False),),
        (("elsewhere", False),),
        (("expert", False),),
        (("expert", True),),
        ((None, True),),
        (("elsewhere", True), ("parent", False)),
    ],
)
def test_invite_read__opens_what_the_queryset_opens(invites: tuple) -> None:
    corpus = make_corpus(name="invites")
    parent = make_batch(corpus, name="parent")
    batches = {
        "parent": parent,
        "child": make_batch(corpus, name="child", parent=parent),
        "elsewhere": make_batch(corpus, name="elsewhere"),
        "expert": make_batch(corpus, name="expert", kind=Batch.Kind.EXPERT_ANSWER),
    }
    worker, stranger = make_worker("invited", is_expert=True), make_worker("stranger", is_expert=True)
    for number, (name, expert) in enumerate(invites):
        batch = batches[name] if name else None
        Invite.objects.create(token_sha256=f"t{number}", batch=batch, worker=worker, is_expert=expert)
    Invite.objects.create(token_sha256="s", batch=None, worker=stranger, is_expert=True)  # another's
    plain_worker = make_worker("not-expert")
    Invite.objects.create(token_sha256="n", batch=None, worker=plain_worker, is_expert=True)
    for batch in batches.values():
        for who in (worker, plain_worker):
            assert admission.invited_to(batch, who) == _plain_invited(batch, who), (batch.name, who, invites)


def test_next_hit_reads__the_worker_of_a_user_and_a_hosted_batch_equal_the_querysets() -> None:
    from crowd.providers.traits import hosted_platforms
    from worker import worker_views

    worker = make_worker("with-user")
    worker.user = User.objects.create_user("with-user")
    worker.save()
    no_worker = User.objects.create_user("no-worker")
    corpus = make_corpus(name="hosted")
    local = make_batch(corpus, name="local", provider="local")
    mturk = make_batch(corpus, name="mturk", provider="mturk")
    hosted = hosted_platforms()
    read = worker_views._hosted_batch_read(len(hosted))
    for user in (worker.user, no_worker):
        found = worker_views._WORKER_OF_USER.all(user.pk)
        plain = Worker.objects.filter(user=user).first()
        assert [_values(w) for w in found] == ([_values(plain)] if plain else [])
    for batch in (local, mturk):
        plain_batches = Batch.objects.filter(pk=batch.pk, provider__in=hosted)
        assert [_values(b) for b in read.all(batch.pk, *hosted)] == [_values(b) for b in plain_batches]
    assert read.all(mturk.pk, *hosted) == [] and len(read.all(local.pk, *hosted)) == 1


def _values(obj: Any) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}
