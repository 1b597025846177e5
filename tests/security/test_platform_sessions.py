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
