"""MTurk sessions a visitor makes up never harm the genuine ones (issue 26), against the fake MTurk server.

MTurk cannot confirm an ``assignmentId`` before it is submitted, and the ``hitId`` is public, so anyone
who knows a worker id can arrive with a made-up id. Each test plays that attacker with boto3 (launch,
sync and review) talking to the local MTurk stand-in, and the genuine worker as MTurk sends them: an id
the fake issued at accept, the HIT page, and the browser's post to ``externalSubmit``.
"""

from __future__ import annotations

import re
import urllib.parse
import urllib.request
from typing import Any

import pytest
from django.test import Client

from annotation.models import HIT, Assignment, Batch, GoldAnswer, GoldItem, GoldStanding
from annotation.services.batches import BatchSpec
from crowd.models import Payment, Worker
from crowd.services.gold import update_standing
from crowd.services.launching import launch
from crowd.services.review import PLATFORM_CHECK, ReviewError, approve_assignment
from crowd.services.sync import sync_batch
from tests.factories import make_textbook
from tests.fakes import fixtures
from worker import hit_links

aws_credentials = fixtures.aws_credentials
fake_mturk_server = fixtures.fake_mturk_server

pytestmark = pytest.mark.django_db

MTURK = "https://www.mturk.com"
ATTACKER_ADDRESS = "203.0.113.66"
"""Where made-up ids come from: not the genuine worker's browser (the test client's 127.0.0.1)."""


def _launch(settings: Any, hits: int, assignments: int, **spec: Any) -> Batch:
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    make_textbook(
        "sci", [f"Mitochondria produce energy in cells, part {n}. Scientists study them." for n in range(6)]
    )
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question",
            corpus="sci",
            provider="mturk",
            limit=hits,
            assignments=assignments,
            reward_cents=50,
            **spec,
        )
    )
    return batch


def _answers(hit: HIT, index: int) -> dict[str, str]:
    """Valid SciQ stage-1 fields about the HIT's ``index``-th passage (a passage takes one question:
    forged work is written about another passage than the genuine workers', see docs/admission.md)."""
    passage = list(hit.passages.order_by("pk"))[index]
    return {
        "passage": str(passage.pk),
        "question": "Which parts of living cells produce the energy they need?",
        "answer": "mitochondria",
    }


def _forge(batch: Batch, hit: HIT, assignment_id: str, worker_id: str, submit: bool = False) -> Any:
    """Arrive as ``worker_id`` with a made-up ``assignmentId`` (only the public HIT id is needed)."""
    client = Client(REMOTE_ADDR=ATTACKER_ADDRESS)
    params = {
        "assignmentId": assignment_id,
        "hitId": hit.platform_ref,
        "workerId": worker_id,
        "turkSubmitTo": MTURK,
    }
    arrival = client.get(f"/hit/{batch.pk}/", params)
    if submit and arrival.status_code == 302:
        page = arrival["Location"]
        client.post(page + "consent/", {"consent": "yes"})
        client.post(page + "draft/", {"question": "forged"})
        assert client.post(page, _answers(hit, 2)).status_code == 200
    return arrival


class Genuine:
    """A worker MTurk really sent: accepted on the fake, arriving at the worker URL MTurk opens."""

    def __init__(self, server: Any, hit: HIT, worker_id: str, passage: int = 0) -> None:
        self.server, self.hit, self.worker_id, self.passage = server, hit, worker_id, passage
        self.assignment_id = server.fake.accept(hit.platform_ref, worker_id)
        self.client = Client()
        self.arrival = self.client.get(
            server.fake.worker_url(hit.platform_ref, self.assignment_id, worker_id)
        )
        self.page = self.arrival["Location"] if self.arrival.status_code == 302 else ""

    def start(self, draft: str) -> None:
        assert self.client.post(self.page + "consent/", {"consent": "yes"}).status_code == 302
        assert self.client.post(self.page + "draft/", {"question": draft}).status_code == 200

    def submit(self) -> None:
        """Submit on crowdqa, then post the page's form to MTurk's externalSubmit as the browser does."""
        done = self.client.post(self.page, _answers(self.hit, self.passage))
        assert done.status_code == 200, done.content[:500]
        html = done.content.decode()
        action = re.search(r'action="([^"]+)"', html).group(1)
        assert action == f"{self.server.url}/mturk/externalSubmit"
        form = re.findall(r'name="([^"]+)" value="([^"]*)"', html)
        assert ("assignmentId", self.assignment_id) in form
        data = urllib.parse.urlencode(form).encode()
        with urllib.request.urlopen(action, data=data, timeout=10) as response:
            assert response.status == 200

    @property
    def row(self) -> Assignment:
        return hit_links.assignment_for(self.page.rstrip("/").rsplit("/", 1)[-1])


def test_made_up_id_for_a_worker_holding_the_hit__never_takes_over(
    settings: Any, fake_mturk_server: Any
) -> None:
    batch = _launch(settings, hits=1, assignments=1)
    hit = batch.hits.get()
    victim = Genuine(fake_mturk_server, hit, "VICTIM")
    assert victim.arrival.status_code == 302
    victim.start("the victim's own draft")

    forged = _forge(batch, hit, "MADEUPASSIGNMENT000000000000001", "VICTIM", submit=True)
    assert forged.status_code == 302 and forged["Location"] != victim.page
    mine = victim.row
    assert mine.platform_ref == victim.assignment_id and mine.status == Assignment.Status.ACCEPTED
    assert mine.draft["question"] == "the victim's own draft"

    # The victim's page, reloaded from MTurk, is still theirs; their submit posts their id to MTurk.
    again = victim.client.get(
        fake_mturk_server.fake.worker_url(hit.platform_ref, victim.assignment_id, "VICTIM")
    )
    assert again["Location"] == victim.page
    victim.submit()
    fake = fake_mturk_server.fake
    assert fake.assignments[victim.assignment_id]["_state"] == "Submitted"

    counts = sync_batch(batch)
    assert counts["confirmed"] == 1
    mine.refresh_from_db()
    attacker = Assignment.objects.get(platform_ref="MADEUPASSIGNMENT000000000000001")
    assert mine.vouched and not attacker.vouched
    hit.refresh_from_db()
    assert hit.status == HIT.Status.COMPLETED  # completed by the work MTurk vouched for

    approve_assignment(mine)
    with pytest.raises(ReviewError, match="has no (assignment|submission)"):
        approve_assignment(attacker)
    assert fake.assignments[victim.assignment_id]["AssignmentStatus"] == "Approved"
    assert list(Payment.objects.values_list("assignment", flat=True)) == [mine.pk]


def test_made_up_ids__never_fill_the_slots_of_genuine_workers(settings: Any, fake_mturk_server: Any) -> None:
    batch = _launch(settings, hits=1, assignments=2)
    hit = batch.hits.get()
    for n in range(6):  # one GET per slot, and more; half of them submit forged work
        assert _forge(batch, hit, f"SQUAT{n:026d}", f"SQUATTER{n}", submit=n % 2 == 0).status_code == 302
    hit.refresh_from_db()
    assert hit.status == HIT.Status.OPEN and hit.live_assignment_count() == 0

    workers = [Genuine(fake_mturk_server, hit, f"GENUINE{n}", passage=n) for n in range(2)]
    assert [w.arrival.status_code for w in workers] == [302, 302]
    for worker in workers:
        worker.start("a real draft")
        worker.submit()
    assert sync_batch(batch)["confirmed"] == 2
    hit.refresh_from_db()
    assert hit.status == HIT.Status.COMPLETED and hit.live_assignment_count() == 2
    assert set(Assignment.objects.vouched().values_list("worker__platform_id", flat=True)) == {
        "GENUINE0",
        "GENUINE1",
    }


def test_made_up_ids_in_a_workers_name__never_use_up_their_cap(settings: Any, fake_mturk_server: Any) -> None:
    batch = _launch(settings, hits=2, assignments=2, max_pairs_per_worker=1)
    first, second = batch.hits.order_by("position")
    forged = _forge(batch, first, "CAPSQUAT0000000000000000000001", "CAPPED", submit=True)
    assert forged.status_code == 302
    _forge(batch, second, "CAPSQUAT0000000000000000000002", "CAPPED")  # held, never submitted

    genuine = Genuine(fake_mturk_server, second, "CAPPED")
    assert genuine.arrival.status_code == 302, genuine.arrival.content[:300]
    genuine.start("mine")
    genuine.submit()
    sync_batch(batch)
    # The cap counts the work MTurk vouched for: now full, a further made-up id opens nothing.
    refused = _forge(batch, first, "CAPSQUAT0000000000000000000003", "CAPPED")
    assert refused.status_code == 409 and "maximum number" in refused.content.decode()


def test_an_id_listed_for_another_worker__never_confirmed_or_followed(
    settings: Any, fake_mturk_server: Any
) -> None:
    batch = _launch(settings, hits=1, assignments=2)
    hit = batch.hits.get()
    fake = fake_mturk_server.fake
    leaked = fake.accept(hit.platform_ref, "OWNER")
    taken = _forge(batch, hit, leaked, "THIEF", submit=True)  # the id reached someone else first
    assert taken.status_code == 302
    fake.external_submit({"assignmentId": [leaked], "question": ["the owner's"]})
    fake.assignments[leaked]["AssignmentStatus"] = "Approved"  # MTurk's auto-approval

    counts = sync_batch(batch)
    assert counts["disowned"] == 1 and counts["confirmed"] == 0
    row = Assignment.objects.get(platform_ref=leaked)
    assert row.status == Assignment.Status.SUBMITTED and not row.vouched
    assert "another worker" in row.platform_meta[PLATFORM_CHECK]
    assert not Payment.objects.exists()
    # The same id with the owner's worker id opens nothing either: it is bound to its first arrival.
    assert _forge(batch, hit, leaked, "OWNER").status_code == 403


def test_failed_items_under_made_up_ids__never_block_the_worker(
    settings: Any, fake_mturk_server: Any
) -> None:
    batch = _launch(settings, hits=3, assignments=3)
    forged = []
    for n, hit in enumerate(batch.hits.order_by("position")):
        assert _forge(batch, hit, f"GOLDSQUAT{n:021d}", "GOLDVICTIM", submit=True).status_code == 302
        assignment = Assignment.objects.get(platform_ref=f"GOLDSQUAT{n:021d}")
        item = GoldItem.objects.create(
            batch=batch,
            kind=GoldItem.Kind.ATTENTION,
            qa_pair=assignment.qa_pairs.get(),
            hit=hit,
            expected={"flags": ["attention"]},
        )
        GoldAnswer.objects.create(assignment=assignment, item=item, worker=assignment.worker, passed=False)
        forged.append(assignment.pk)
    victim = Worker.objects.get(platform="mturk", platform_id="GOLDVICTIM")

    record = update_standing(batch, victim)  # three failed attention items, none MTurk vouched for
    victim.refresh_from_db()
    assert record.state != GoldStanding.State.BLOCKED and record.attention_n == 0
    assert not victim.blocked and "GOLDVICTIM" not in fake_mturk_server.fake.blocks

    # Work MTurk vouched for does count: the same failures then block (locally and on MTurk).
    Assignment.objects.filter(pk__in=forged).update(vouched=True)
    assert update_standing(batch, victim).state == GoldStanding.State.BLOCKED
    victim.refresh_from_db()
    assert victim.blocked and "GOLDVICTIM" in fake_mturk_server.fake.blocks
