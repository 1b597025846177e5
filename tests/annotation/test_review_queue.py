"""The review queue: filters, highlighted evidence, bulk decisions (services/review_queue.py + views)."""

from __future__ import annotations

import pytest

from annotation.models import AnswerSpan, Assignment, QAPair
from annotation.services.batches import BatchSpec, create_batch
from console.review_queue import QueueFilter, queue_pairs
from tests.factories import make_corpus, make_document, make_researcher, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

TEXT = "Grading: exams 60%, labs 40%.\nLate work loses 10% per day <unless excused>.\n"


@pytest.fixture
def two_submissions() -> list[Assignment]:
    corpus = make_corpus(name="syl")
    document = make_document(corpus, name="bio", text=TEXT, page_starts=[0, 30])
    make_document(corpus, name="chem", text=TEXT, page_starts=[0, 30])
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl"))
    batch.publish()
    out = []
    for name, flags in (("w1", ["pii_request"]), ("w2", [])):
        assignment = claim_next(batch, make_worker(name))
        assignment.submit({})
        pair = QAPair.objects.create(
            corpus=corpus,
            document=assignment.hit.document,
            assignment=assignment,
            question_type="yes/no",
            question=f"Is late work accepted ({name})?",
            answer="Yes",
            qc_flags=flags,
        )
        start = TEXT.index("Late work")
        end = TEXT.index(".\n", start) + 1
        AnswerSpan.objects.create(
            qa_pair=pair, position=0, text=TEXT[start:end], start=start, end=end, page=document.page_of(start)
        )
        out.append(assignment)
    return out


def test_queue_pairs__filters(two_submissions: list[Assignment]) -> None:
    first, second = two_submissions
    assert len(queue_pairs(QueueFilter())) == 2
    assert [p.assignment_id for p in queue_pairs(QueueFilter(flag="pii_request"))] == [first.pk]
    assert [p.assignment_id for p in queue_pairs(QueueFilter(worker=second.worker.pseudonym))] == [second.pk]
    assert queue_pairs(QueueFilter(question_type="summarization")) == []
    assert len(queue_pairs(QueueFilter(batch=first.hit.batch_id))) == 2
    assert queue_pairs(QueueFilter(status="approved")) == []


def test_review_queue__highlights_escaped_evidence_and_decides_in_bulk(client, two_submissions) -> None:  # type: ignore[no-untyped-def]
    user = make_researcher()
    client.force_login(user)
    body = client.get("/review/", {"flag": "pii_request"}).content.decode()
    assert "(w1)" in body and "(w2)" not in body
    assert '<mark class="span">Late work loses 10% per day &lt;unless excused&gt;.</mark>' in body
    ids = [str(a.pk) for a in two_submissions]
    response = client.post(
        "/review/decide/", {"assignment": ids, "action": "reject", "reason": ""}, follow=True
    )
    assert "a rejection needs a reason the worker can read" in response.content.decode()
    client.post("/review/decide/", {"assignment": ids, "action": "approve"})
    assert {a.status for a in Assignment.objects.filter(pk__in=ids)} == {"approved"}
    page = client.get(f"/assignments/{ids[0]}/").content.decode()
    assert "with these answer spans marked" in page and '<mark class="span">Late work' in page


def test_review_queue_decide__lists_ticked_submissions_that_are_gone(client, two_submissions) -> None:  # type: ignore[no-untyped-def]
    client.force_login(make_researcher())
    ids = [str(a.pk) for a in two_submissions]
    response = client.post(
        "/review/decide/", {"assignment": [*ids, "999999"], "action": "approve"}, follow=True
    )
    body = response.content.decode()
    assert "Approved 2 submissions" in body
    assert "Skipped 1 ticked submission(s) that no longer exist: [999999]" in body
