"""Forged SciQ stage-1 work never uses up a HIT's passages (issue 26), against the fake MTurk server.

A SciQ stage-1 passage takes one question. Anyone who knows the public HIT id can submit work under a
made-up MTurk ``assignmentId``; before the rule in docs/admission.md ("passages held only by work its
platform does not vouch for are not taken"), three such submissions used up a HIT's three passages and
the genuine worker could only reject them all. The attacker and the genuine worker go through the real
views; sync and review talk to the fake MTurk server with boto3.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation.models import HIT, Assignment, Batch, Passage, QAPair
from annotation.services.batches import passages_free_for_hits
from crowd.services.review import ReviewError, approve_assignment
from crowd.services.sync import sync_batch
from tests.fakes import fixtures
from tests.security.test_mturk_sessions import ATTACKER_ADDRESS, MTURK, Genuine, _launch

aws_credentials = fixtures.aws_credentials
fake_mturk_server = fixtures.fake_mturk_server

pytestmark = pytest.mark.django_db


def _passages(hit: HIT) -> list[Passage]:
    return list(hit.passages.order_by("pk"))


def _forge_about(batch: Batch, hit: HIT, assignment_id: str, worker_id: str, choice: str) -> Any:
    """Arrive under a made-up id and submit a valid question about passage ``choice`` (or ``none``).

    Returns:
        The submit's response.
    """
    client = Client(REMOTE_ADDR=ATTACKER_ADDRESS)
    params = {
        "assignmentId": assignment_id,
        "hitId": hit.platform_ref,
        "workerId": worker_id,
        "turkSubmitTo": MTURK,
    }
    arrival = client.get(f"/hit/{batch.pk}/", params)
    assert arrival.status_code == 302, arrival.content[:300]
    page = arrival["Location"]
    client.post(page + "consent/", {"consent": "yes"})
    question = "Which parts of living cells produce the energy they need?"
    return client.post(page, {"passage": choice, "question": question, "answer": "mitochondria"})


def _stored(response: Any) -> bool:
    """True for a submit the page thanked for (its form posts on to MTurk's externalSubmit)."""
    return response.status_code == 200 and b"externalSubmit" in response.content


def test_forged_work_on_every_passage__never_takes_them_from_the_genuine_worker(
    settings: Any, fake_mturk_server: Any
) -> None:
    batch = _launch(settings, hits=1, assignments=1)
    hit = batch.hits.get()
    passages = _passages(hit)
    # The attacker writes about each of the three passages and rejects them all, under made-up ids.
    for n, passage in enumerate(passages):
        assert _stored(_forge_about(batch, hit, f"PASSAGESQUAT{n:018d}", f"SQUATTER{n}", str(passage.pk)))
    assert _stored(_forge_about(batch, hit, "PASSAGESQUAT999999999999999999", "SQUATTER9", "none"))
    assert Passage.objects.filter(pk__in=[p.pk for p in passages], used_by__isnull=False).count() == 0
    assert {p.crowd_rejections for p in Passage.objects.filter(hits=hit)} == {0}

    # The genuine worker, sent by MTurk, writes about the first passage: accepted and posted to MTurk.
    genuine = Genuine(fake_mturk_server, hit, "GENUINE", passage=0)
    assert genuine.arrival.status_code == 302
    genuine.start("my draft")
    genuine.submit()

    assert sync_batch(batch)["confirmed"] == 1
    mine = QAPair.objects.get(assignment__platform_ref=genuine.assignment_id)
    first = Passage.objects.get(pk=passages[0].pk)
    assert first.used_by_id == mine.pk and "passage_reused" not in mine.qc_flags
    hit.refresh_from_db()
    assert hit.status == HIT.Status.COMPLETED
    # The forged work took nothing for good: the other two passages go back to the pool, unretired.
    assert set(passages_free_for_hits(hit.batch.corpus).filter(pk__in=[p.pk for p in passages])) == set(
        passages[1:]
    )
    assert {p.crowd_rejections for p in Passage.objects.filter(hits=hit)} == {0}
    # Only the genuine work is approved and paid; the forged work is never vouched for.
    approve_assignment(genuine.row)
    forged = Assignment.objects.filter(platform_ref__startswith="PASSAGESQUAT").first()
    with pytest.raises(ReviewError):
        approve_assignment(forged)
    assert Passage.objects.get(pk=passages[0].pk).used_by_id == mine.pk


def test_a_passage_vouched_work_holds__refused_to_later_sessions(
    settings: Any, fake_mturk_server: Any
) -> None:
    batch = _launch(settings, hits=1, assignments=2)
    hit = batch.hits.get()
    first = _passages(hit)[0]
    genuine = Genuine(fake_mturk_server, hit, "GENUINE", passage=0)
    genuine.start("mine")
    genuine.submit()
    sync_batch(batch)
    assert Passage.objects.get(pk=first.pk).used_by.assignment.vouched

    refused = _forge_about(batch, hit, "LATECOMER000000000000000000001", "LATE", str(first.pk))
    assert not _stored(refused)
    assert b"Another worker has just written a question about this passage" in refused.content
    assert not QAPair.objects.filter(assignment__platform_ref="LATECOMER000000000000000000001").exists()


def test_two_genuine_workers_on_one_passage__both_kept_the_second_flagged(
    settings: Any, fake_mturk_server: Any
) -> None:
    """The rule's cost: two genuine sessions that chose one passage before MTurk confirmed either."""
    batch = _launch(settings, hits=1, assignments=2)
    hit = batch.hits.get()
    workers = [Genuine(fake_mturk_server, hit, f"GENUINE{n}", passage=0) for n in range(2)]
    for worker in workers:
        worker.start("mine")
        worker.submit()
    assert sync_batch(batch)["confirmed"] == 2
    pairs = list(QAPair.objects.filter(assignment__hit=hit).order_by("assignment__vouched", "pk"))
    holder = Passage.objects.get(pk=_passages(hit)[0].pk).used_by
    assert holder in pairs and holder.assignment.vouched
    (other,) = [p for p in pairs if p.pk != holder.pk]
    assert other.qc_flags[-1:] == ["passage_reused"] and other.qc_severity["passage_reused"] == "review"
    assert "passage_reused" not in holder.qc_flags
    assert sync_batch(batch)["confirmed"] == 0  # applied once
    other.refresh_from_db()
    assert other.qc_flags.count("passage_reused") == 1
