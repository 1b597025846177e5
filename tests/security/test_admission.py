"""Attacks on the admission rule, replayed against the real views (docs/admission.md).

Each test plays the attacker (a crowd worker who knows another worker's id, or a stranger with a link)
and asserts the attack fails with a 4xx page, while the honest path keeps working.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from annotation.models import HIT, Assignment, Batch, QAPair
from annotation.services.batches import BatchSpec, create_batch
from crowd.invites import create_invites
from crowd.models import Consent, Worker
from tests.factories import make_textbook
from worker import hit_links

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
    "Enzymes lower the activation energy of chemical reactions in living cells.",
    "The nucleus holds the genetic material of eukaryotic cells inside a membrane.",
    "Cell membranes control what enters and leaves the cell through channels.",
)
MTURK = "https://www.mturk.com"


def _batch(provider: str = "local", kind: str = "sciq_question", assignments: int = 1, **kw: Any) -> Batch:
    if not Batch.objects.exists():
        make_textbook("tb", [f"{text} (Chapter {n}.)" for n in range(1, 5) for text in PASSAGES])
    batch = create_batch(
        BatchSpec(kind=kind, corpus="tb", provider=provider, assignments=assignments, limit=1)
    )
    for position, hit in enumerate(batch.hits.order_by("pk")):
        hit.platform_ref = f"HIT{batch.pk}-{position}"
        hit.save(update_fields=["platform_ref"])
    for name, value in kw.items():
        setattr(batch, name, value)
    batch.save()
    batch.publish()
    return batch


def _mturk(batch: Batch, assignment_id: str, worker_id: str, submit_to: str = MTURK) -> dict[str, str]:
    hit = batch.hits.order_by("pk").first()
    assert hit is not None
    return {
        "assignmentId": assignment_id,
        "hitId": hit.platform_ref,
        "workerId": worker_id,
        "turkSubmitTo": submit_to,
    }


def _prolific(pid: str, session: str, study: str = "STUDY1") -> dict[str, str]:
    return {"PROLIFIC_PID": pid, "STUDY_ID": study, "SESSION_ID": session}


def _draft(client: Client, location: str, text: str) -> None:
    assignment = hit_links.assignment_for(location.rstrip("/").rsplit("/", 1)[-1])
    Consent.objects.get_or_create(worker=assignment.worker, batch=assignment.hit.batch)
    assert client.post(f"{location}draft/", {"question": text}).status_code == 200


def test_mturk_takeover__another_assignment_id_gets_its_own_session(client: Client) -> None:
    batch = _batch("mturk")
    victim = client.get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "VICTIM"))
    assert victim.status_code == 302
    _draft(client, victim["Location"], "the victim's secret draft")

    evil_host = Client().get(f"/hit/{batch.pk}/", _mturk(batch, "A2", "VICTIM", "https://evil.example.net"))
    assert evil_host.status_code == 400 and "turkSubmitTo" in evil_host.content.decode()

    attacker = Client()
    taken = attacker.get(f"/hit/{batch.pk}/", _mturk(batch, "A2", "VICTIM"))
    assert taken.status_code == 302 and taken["Location"] != victim["Location"]
    own = Assignment.objects.get(platform_ref="A2")
    Consent.objects.get_or_create(worker=own.worker, batch=batch)
    assert "secret draft" not in attacker.get(taken["Location"]).content.decode()
    assert own.draft == {} and not own.vouched

    # The victim's session is untouched: same id, same draft, still open, and it resumes.
    mine = Assignment.objects.get(platform_ref="A1")
    assert mine.status == Assignment.Status.ACCEPTED
    assert mine.draft["question"] == "the victim's secret draft"
    again = client.get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "VICTIM"))
    assert again["Location"] == victim["Location"]
    # The victim's id with another worker id, or on another HIT, opens nothing.
    assert Client().get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "ATTACKER")).status_code == 403


def test_mturk_return_then_reaccept__fresh_id_is_posted(client: Client) -> None:
    batch = _batch("mturk")
    client.get(f"/hit/{batch.pk}/", _mturk(batch, "OLD", "W1"))
    page = client.get(f"/hit/{batch.pk}/", _mturk(batch, "FRESH", "W1"))["Location"]
    assignment = Assignment.objects.get(platform_ref="FRESH")
    Consent.objects.create(worker=assignment.worker, batch=batch)
    passage = assignment.hit.passages.order_by("pk").first()
    done = client.post(
        page,
        {
            "passage": str(passage.pk),
            "question": "What releases energy from glucose in cells?",
            "answer": "mitochondria",
        },
    )
    body = done.content.decode()
    assert 'name="assignmentId" value="FRESH"' in body
    assert f'action="{MTURK}/mturk/externalSubmit"' in body
    # Another id for the same worker and HIT never opens the submitted session (a session of its own).
    late = client.get(f"/hit/{batch.pk}/", _mturk(batch, "THIRD", "W1"))
    assert late.status_code == 302 and late["Location"] != page
    # Once MTurk vouched for the submission, MTurk issues no other id to this worker on this HIT.
    Assignment.objects.filter(platform_ref="FRESH").update(vouched=True)
    assert client.get(f"/hit/{batch.pk}/", _mturk(batch, "FOURTH", "W1")).status_code == 409


def test_prolific_takeover__bare_pid_with_another_session_is_refused(client: Client) -> None:
    batch = _batch("prolific", assignments=2, platform_ref="STUDY1")
    victim = client.get(f"/hit/{batch.pk}/", _prolific("PVICTIM", "S-VICTIM"))
    assert victim.status_code == 302
    attack = Client().get(f"/hit/{batch.pk}/", _prolific("PVICTIM", "S-ATTACKER"))
    assert attack.status_code == 409
    assert victim["Location"] not in attack.content.decode()
    # The victim's own session resumes.
    assert client.get(f"/hit/{batch.pk}/", _prolific("PVICTIM", "S-VICTIM"))["Location"] == victim["Location"]


@pytest.mark.parametrize(
    "provider, params, status",
    [
        ("local", _prolific("P1", "S1"), 403),
        ("local", {"assignmentId": "A1", "hitId": "X", "workerId": "W", "turkSubmitTo": MTURK}, 403),
        ("mturk", _prolific("P1", "S1"), 403),
        ("prolific", _prolific("P1", "S1", study="OTHER-STUDY"), 403),
        ("mturk", {"assignmentId": "A1", "hitId": "NOT-OURS", "workerId": "W", "turkSubmitTo": MTURK}, 404),
        ("prolific", _prolific("P" * 150, "S1"), 400),
        ("prolific", _prolific("P\x01", "S1"), 400),  # NUL never gets here: the request guard drops it
    ],
)
def test_arrival__only_the_batchs_own_platform_and_study(
    client: Client, provider: str, params: dict[str, str], status: int
) -> None:
    batch = _batch(provider, platform_ref="STUDY1" if provider == "prolific" else "")
    response = client.get(f"/hit/{batch.pk}/", params)
    assert response.status_code == status, response.content[:300]
    assert not Assignment.objects.exists()


def test_mturk_arrivals__unconfirmed_sessions_hold_no_slot(client: Client) -> None:
    batch = _batch("mturk", assignments=2)
    codes = [Client().get(f"/hit/{batch.pk}/", _mturk(batch, f"A{i}", f"W{i}")).status_code for i in range(4)]
    assert codes == [302, 302, 302, 302]  # MTurk's MaxAssignments is the slot count, not local rows
    hit = batch.hits.get()
    assert hit.live_assignment_count() == 0
    # Slots held by work MTurk vouched for do count: a third arrival finds none.
    Assignment.objects.filter(platform_ref__in=["A0", "A1"]).update(
        vouched=True, status=Assignment.Status.SUBMITTED
    )
    late = Client().get(f"/hit/{batch.pk}/", _mturk(batch, "A9", "W9"))
    assert late.status_code == 409 and "no free slot" in late.content.decode()


def test_mturk_arrival__blocked_and_unqualified_workers_are_refused(client: Client) -> None:
    batch = _batch("mturk", assignments=3, options={"required_qualification": "passed-screening"})
    assert client.get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "W1")).status_code == 403
    Worker.objects.filter(platform_id="W1").update(blocked=True)
    assert client.get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "W1")).status_code == 403


def test_mturk_arrival__worker_never_validates_their_own_question(client: Client) -> None:
    stage1 = _batch("mturk")
    author = Worker.objects.get_or_create_for("mturk", "AUTHOR")
    written = Assignment.objects.create(
        hit=stage1.hits.get(), worker=author, status=Assignment.Status.APPROVED
    )
    pair = QAPair.objects.create(
        corpus=stage1.corpus, assignment=written, question_type="sciq", question="What is it?", answer="x"
    )
    stage2 = Batch.objects.create(
        name="s2", kind=Batch.Kind.SCIQ_DISTRACTOR, provider="mturk", corpus=stage1.corpus, parent=stage1
    )
    HIT.objects.create(batch=stage2, qa_pair=pair, platform_ref="S2HIT", max_assignments=3)
    stage2.publish()
    own = {"assignmentId": "A9", "hitId": "S2HIT", "workerId": "AUTHOR", "turkSubmitTo": MTURK}
    response = client.get(f"/hit/{stage2.pk}/", own)
    assert response.status_code == 409 and "question you wrote" in response.content.decode()
    other = client.get(f"/hit/{stage2.pk}/", {**own, "workerId": "SOMEONE", "assignmentId": "A10"})
    assert other.status_code == 302


def _signed_in(batch: Batch | None, expert: bool = False) -> Client:
    client = Client()
    token = create_invites(1, batch=batch, is_expert=expert)[0].url.rstrip("/").rsplit("/", 1)[-1]
    assert client.post(reverse("worker:invite", kwargs={"token": token})).status_code == 302
    return client


def test_invites__tied_to_their_batch_and_experts_only_on_expert_batches() -> None:
    first = _batch("local", assignments=3)
    second = _batch("local", assignments=3)
    expert_batch = _batch("local", assignments=3)
    Batch.objects.filter(pk=expert_batch.pk).update(kind=Batch.Kind.EXPERT_ANSWER)

    invited = _signed_in(first)
    assert Assignment.objects.filter(hit__batch=first).count() == 1  # the invite opened its own batch
    for other in (second, expert_batch):
        response = invited.post(reverse("worker:next", kwargs={"batch_id": other.pk}))
        assert response.status_code == 302 and response["Location"] == reverse("worker:home")
        assert not Assignment.objects.filter(hit__batch=other).exists()
    home = invited.get(reverse("worker:home")).content.decode()
    assert second.title not in home or second.title == first.title

    general = _signed_in(None)
    general.post(reverse("worker:next", kwargs={"batch_id": expert_batch.pk}))
    assert not Assignment.objects.filter(hit__batch=expert_batch).exists()

    expert = _signed_in(expert_batch, expert=True)
    expert.post(reverse("worker:next", kwargs={"batch_id": expert_batch.pk}))
    assert Assignment.objects.filter(hit__batch=expert_batch).count() == 1


def test_next_hit__only_a_hosted_batch_that_exists_and_only_for_a_worker() -> None:
    local = _batch("local", assignments=3)
    mturk = _batch("mturk", assignments=3)
    worker = _signed_in(local)
    for batch_id in (mturk.pk, 10**6, 2**63 - 1, 2**63, 10**40):
        assert worker.post(reverse("worker:next", kwargs={"batch_id": batch_id})).status_code == 404, batch_id
    assert worker.post(reverse("worker:next", kwargs={"batch_id": local.pk})).status_code == 302
    researcher = Client()
    researcher.force_login(User.objects.create_user("researcher-only", password="x"))
    response = researcher.post(reverse("worker:next", kwargs={"batch_id": local.pk}))
    assert response.status_code == 302 and response["Location"] == reverse("worker:home")
    assert not Assignment.objects.filter(worker__user__username="researcher-only").exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_mturk_arrivals__one_session_per_assignment_id() -> None:
    import threading

    from django.db import connection

    batch = _batch("mturk", assignments=2)
    locations: list[str] = []
    start = threading.Barrier(6)

    def arrive(i: int) -> None:
        try:
            start.wait()
            # Three double clicks of one id, three distinct ids.
            params = _mturk(batch, "SAME" if i < 3 else f"A{i}", "W0" if i < 3 else f"W{i}")
            locations.append(Client().get(f"/hit/{batch.pk}/", params)["Location"])
        finally:
            connection.close()

    threads = [threading.Thread(target=arrive, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(locations) == 6 and len(set(locations)) == 4
    assert Assignment.objects.filter(platform_ref="SAME").count() == 1
    assert Assignment.objects.count() == 4


def test_after_submit__a_stored_foreign_turk_submit_to_is_never_posted_to(client: Client) -> None:
    batch = _batch("mturk")
    page = client.get(f"/hit/{batch.pk}/", _mturk(batch, "A1", "W1"))["Location"]
    assignment = Assignment.objects.get()
    # An assignment recorded before the allow-list, pointing at another site.
    assignment.platform_meta = {"turk_submit_to": "https://evil.example.net/mturk/externalSubmit"}
    assignment.save(update_fields=["platform_meta"])
    Consent.objects.create(worker=assignment.worker, batch=batch)
    passage = assignment.hit.passages.order_by("pk").first()
    fields = {
        "passage": str(passage.pk),
        "question": "What releases energy from glucose in cells?",
        "answer": "mitochondria",
    }
    body = client.post(page, fields).content.decode()
    assert "evil.example.net" not in body and "answers are saved" in body
