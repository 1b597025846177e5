"""Researcher pages on a batch: dashboard, a submission with its spans, approve / reject / bonus / block."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import AnswerSpan, Assignment, QAPair
from annotation.services.assigning import claim_next
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Payment
from tests.factories import make_corpus, make_document, make_worker

pytestmark = pytest.mark.django_db

TEXT = "Grading: exams 60%, labs 40%.\nLate work loses 10% per day.\n"


@pytest.fixture
def staff(client):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user(
        "r", password="pw-for-tests", is_staff=True, is_superuser=True
    )
    client.force_login(user)
    return client


@pytest.fixture
def submitted() -> Assignment:
    corpus = make_corpus(name="syl")
    document = make_document(corpus, name="bio", text=TEXT, page_starts=[0, 30])
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", reward_cents=150))
    batch.publish()
    assignment = claim_next(batch, make_worker("w1"))
    assignment.submit({"qa-0-question": "How much do labs count?"})
    pair = QAPair.objects.create(
        corpus=corpus,
        document=document,
        assignment=assignment,
        position=0,
        question_type="single factual",
        question="How much do labs count?",
        answer="40%",
        qc_flags=["too_short"],
    )
    start = TEXT.index("Late work")
    AnswerSpan.objects.create(
        qa_pair=pair,
        position=0,
        text="Late work loses 10% per day.",
        start=start,
        end=start + 28,
        page=document.page_of(start),
    )
    return assignment


def test_batch_page__lists_submission_and_dashboard(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    body = staff.get(f"/batches/{submitted.hit.batch_id}/").content.decode()
    assert f"/assignments/{submitted.pk}/" in body
    assert submitted.worker.pseudonym in body and submitted.worker.platform_id not in body
    assert "median time per HIT" in body and "too_short" in body


def test_assignment_page__shows_spans_with_offsets_and_pages(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    body = staff.get(f"/assignments/{submitted.pk}/").content.decode()
    assert "“Late work loses 10% per day.”" in body and "[30–58, page 2]" in body
    admin = staff.get(f"/admin/annotation/assignment/{submitted.pk}/change/").content.decode()
    assert "[30:58] p.2: Late work loses 10% per day." in admin


def test_review__approve_pays_reward_once_then_bonus_once(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    url = f"/assignments/{submitted.pk}/review/"
    assert staff.post(url, {"action": "approve"}).status_code == 302
    staff.post(url, {"action": "approve"})  # a double click
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.APPROVED
    assert Payment.objects.filter(assignment=submitted, kind="reward").count() == 1
    for _ in range(2):
        staff.post(f"/assignments/{submitted.pk}/bonus/", {"cents": "50", "reason": "Thorough spans"})
    bonuses = Payment.objects.filter(assignment=submitted, kind="bonus")
    assert bonuses.count() == 1 and bonuses.get().amount_cents == 50


def test_review__reject_needs_reason_and_keeps_message(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    url = f"/assignments/{submitted.pk}/review/"
    page = staff.post(url, {"action": "reject", "reason": "  "}, follow=True).content.decode()
    assert "reason" in page
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.SUBMITTED
    staff.post(url, {"action": "reject", "reason": "Spans were not copied from the syllabus."})
    submitted.refresh_from_db()
    assert submitted.status == Assignment.Status.REJECTED and submitted.feedback.startswith("Spans")


def test_actions__need_staff_even_on_a_public_dashboard(client, settings, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    settings.CROWDQA_PUBLIC_DASHBOARD = True
    assert client.get(f"/assignments/{submitted.pk}/").status_code == 200
    assert client.post(f"/assignments/{submitted.pk}/review/", {"action": "approve"}).status_code == 403
    assert client.post(f"/workers/{submitted.worker_id}/block/", {"reason": "x"}).status_code == 403


def test_block_worker__blocks_claims(staff, submitted: Assignment) -> None:  # type: ignore[no-untyped-def]
    worker = submitted.worker
    staff.post(
        f"/workers/{worker.pk}/block/",
        {"action": "block", "reason": "copied answers", "next": "https://evil.test/"},
    )
    worker.refresh_from_db()
    assert worker.blocked and worker.block_reason == "copied answers"
    staff.post(f"/workers/{worker.pk}/block/", {"action": "unblock"})
    worker.refresh_from_db()
    assert not worker.blocked
