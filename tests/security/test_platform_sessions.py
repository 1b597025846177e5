"""Platform sessions: Prolific's one session per participant per study, and caps that hold under races.

Replays two attacks of issue 26: a participant's ``PROLIFIC_PID`` with an invented ``SESSION_ID`` after
(or while) their real session ran got a second assignment in their name; and 8 concurrent arrivals of
one participant with 8 session ids gave 2 assignments where the cap allows 1 (only the HIT row was
locked). The race runs 20 times with 8 threads on PostgreSQL (skipped on an in-memory SQLite database).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Worker
from tests.factories import make_textbook
from tests.threads import run_in_threads, skip_unless_threads_share_the_database
from worker.assigning import ClaimRefused, claim_next

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


def _prolific_batch(hits: int = 4) -> Batch:
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(hits) for text in PASSAGES])
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="prolific", limit=hits))
    batch.platform_ref = "STUDY1"
    batch.save()
    batch.publish()
    return batch


def _arrive(client: Client, batch: Batch, pid: str, session: str) -> Any:
    return client.get(f"/hit/{batch.pk}/", {"PROLIFIC_PID": pid, "STUDY_ID": "STUDY1", "SESSION_ID": session})


@pytest.mark.django_db
def test_prolific__a_second_session_id_is_refused_while_and_after_the_first(client: Client) -> None:
    batch = _prolific_batch()
    first = _arrive(client, batch, "PID1", "S1")
    assert first.status_code == 302
    while_open = _arrive(Client(), batch, "PID1", "S-INVENTED-1")
    assert while_open.status_code == 409
    Assignment.objects.filter(platform_ref="S1").update(status=Assignment.Status.SUBMITTED)
    after_submit = _arrive(Client(), batch, "PID1", "S-INVENTED-2")
    assert after_submit.status_code == 409 and "once" in after_submit.content.decode()
    Assignment.objects.filter(platform_ref="S1").update(status=Assignment.Status.RETURNED)
    after_return = _arrive(Client(), batch, "PID1", "S-INVENTED-3")
    assert after_return.status_code == 409
    assert Assignment.objects.filter(worker__platform_id="PID1").count() == 1
    assert _arrive(client, batch, "PID1", "S1").status_code == 302  # the real session still opens
    assert _arrive(Client(), batch, "PID2", "S2").status_code == 302  # another participant is admitted


@pytest.mark.django_db(transaction=True)
def test_prolific__concurrent_arrivals_of_one_participant_get_one_assignment() -> None:
    """20 runs of 8 concurrent arrivals (8 session ids) of one participant: never more than one."""
    skip_unless_threads_share_the_database()
    batch = _prolific_batch(hits=8)
    breaches = []
    for run in range(20):
        worker = Worker.objects.get_or_create_for("prolific", f"PID-RACE-{run}")
        barrier = threading.Barrier(8)
        won: list[int] = []

        def arrive(
            session: str, worker: Worker = worker, barrier: threading.Barrier = barrier, won: list[int] = won
        ) -> None:
            barrier.wait()
            try:
                assignment = claim_next(batch, worker, platform_ref=session)
            except ClaimRefused:
                return
            won.append(assignment.pk)  # list.append is atomic

        run_in_threads(arrive, ((f"S-{run}-{i}",) for i in range(8)))
        count = Assignment.objects.filter(worker=worker).count()
        if count != 1 or len(set(won)) != 1:
            breaches.append((run, count, won))
        Assignment.objects.filter(worker=worker).update(status=Assignment.Status.RETURNED)  # slot free
    assert breaches == []


@pytest.mark.django_db(transaction=True)
def test_local__per_worker_cap_holds_under_concurrent_claims() -> None:
    """A local worker capped at one HIT's pairs asks from 8 tabs at once, 20 times: one HIT each time."""
    skip_unless_threads_share_the_database()
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(8) for text in PASSAGES])
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="local", limit=8))
    batch.max_pairs_per_worker = 1
    batch.save()
    batch.publish()
    breaches = []
    for run in range(20):
        worker = Worker.objects.get_or_create_for("local", f"cap-{run}")
        barrier = threading.Barrier(8)

        def ask(worker: Worker = worker, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                claim_next(batch, worker)
            except ClaimRefused:
                pass

        run_in_threads(ask, ((),) * 8)
        count = Assignment.objects.filter(worker=worker).count()
        if count != 1:
            breaches.append((run, count))
        Assignment.objects.filter(worker=worker).update(status=Assignment.Status.RETURNED)
    assert breaches == []


GENUINE_ADDRESS = "198.51.100.7"
ATTACKER_ADDRESS = "203.0.113.66"


def _mturk_batch(hits: int) -> Batch:
    """An MTurk SciQ batch of ``hits`` HITs (known platform ids), each worker capped at one question."""
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(hits) for text in PASSAGES])
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="mturk", limit=hits))
    for position, hit in enumerate(batch.hits.order_by("position")):
        hit.platform_ref = f"RACEHIT{position}"
        hit.save(update_fields=["platform_ref"])
    batch.max_pairs_per_worker = 1
    batch.save()
    batch.publish()
    return batch


def _accept(batch: Batch, position: int, assignment_id: str, worker_id: str, address: str) -> Any:
    """An MTurk arrival on the batch's ``position``-th HIT from the client at ``address``."""
    params = {
        "assignmentId": assignment_id,
        "hitId": f"RACEHIT{position}",
        "workerId": worker_id,
        "turkSubmitTo": "https://www.mturk.com",
    }
    return Client(REMOTE_ADDR=address).get(f"/hit/{batch.pk}/", params)


@pytest.mark.django_db
def test_mturk__cap_counts_the_hits_a_worker_holds_at_once_but_not_made_up_ids_from_elsewhere() -> None:
    batch = _mturk_batch(hits=4)
    # Someone who knows the worker id holds three HITs in their name from another address.
    assert _accept(batch, 0, "SQUAT0000000000000000000000001", "CAPPED", ATTACKER_ADDRESS).status_code == 302
    for position in (1, 2):
        refused = _accept(
            batch, position, f"SQUAT00000000000000000000000{position}1", "CAPPED", ATTACKER_ADDRESS
        )
        assert refused.status_code == 409  # their own made-up sessions cap them
    # The genuine worker is still admitted; a second HIT held at once from their browser is over the cap.
    assert _accept(batch, 1, "GENUINE000000000000000000000001", "CAPPED", GENUINE_ADDRESS).status_code == 302
    second = _accept(batch, 2, "GENUINE000000000000000000000002", "CAPPED", GENUINE_ADDRESS)
    assert second.status_code == 409 and "maximum number" in second.content.decode()
    # Reloading the session they hold still opens it.
    assert _accept(batch, 1, "GENUINE000000000000000000000001", "CAPPED", GENUINE_ADDRESS).status_code == 302
    # Return on MTurk and accept the same HIT again: a fresh id there is admitted (one assignment of a
    # HIT at a time on MTurk), while another HIT is still over the cap.
    assert _accept(batch, 1, "GENUINE000000000000000000000005", "CAPPED", GENUINE_ADDRESS).status_code == 302
    Assignment.objects.filter(platform_ref="GENUINE000000000000000000000005").delete()
    # A session past its time limit, or submitted work sync found missing on MTurk, no longer counts.
    held = Assignment.objects.get(platform_ref="GENUINE000000000000000000000001")
    Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.SUBMITTED)
    assert _accept(batch, 2, "GENUINE000000000000000000000003", "CAPPED", GENUINE_ADDRESS).status_code == 409
    Assignment.objects.filter(pk=held.pk).update(
        platform_meta={**held.platform_meta, "missing_on_platform": True}
    )
    assert _accept(batch, 2, "GENUINE000000000000000000000004", "CAPPED", GENUINE_ADDRESS).status_code == 302
    assert "client" in held.platform_meta and GENUINE_ADDRESS not in str(held.platform_meta)


@pytest.mark.django_db(transaction=True)
def test_mturk__per_worker_cap_holds_when_one_worker_accepts_many_hits_at_once() -> None:
    """20 runs: one MTurk worker capped at one question arrives on 8 HITs at once (8 assignment ids)."""
    skip_unless_threads_share_the_database()
    batch = _mturk_batch(hits=8)
    breaches = []
    for run in range(20):
        worker_id = f"RACER{run}"
        barrier = threading.Barrier(8)

        def arrive(position: int, worker_id: str = worker_id, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            _accept(batch, position, f"{worker_id}X{position:024d}", worker_id, GENUINE_ADDRESS)

        run_in_threads(arrive, ((position,) for position in range(8)))
        count = Assignment.objects.filter(worker__platform_id=worker_id).count()
        if count != 1:
            breaches.append((run, count))
    assert breaches == []
