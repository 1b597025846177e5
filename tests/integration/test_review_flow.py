"""A batch of submissions flows end to end with a real Celery worker: the worker submits on the HIT page,
the after-submission job runs on a real ``celery worker`` process through Redis, the pair the page's QC
flagged shows up in the review queue, and the researcher's decision reaches the platform (the local
crowd here)."""

from __future__ import annotations

import time

import pytest

from annotation.models import HIT, Assignment, QAPair
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent, Payment
from tests.factories import make_researcher, make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

PASSAGES = (
    "Oxidants are compounds that are capable of accepting electrons from other substances.",
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


def _wait_for(predicate, timeout: float = 90.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def test_submit_qc_job_review_queue_decision(client, broker: str, celery_worker_process) -> None:  # type: ignore[no-untyped-def]
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb"))
    batch.publish()
    celery_worker_process("default", "qc-worker", broker)
    assignment = claim_next(batch, make_worker("writer"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    passage = assignment.hit.passages.get(text=PASSAGES[0])
    # The answer is a paraphrase that is not in the passage: QC flags it for review (a warning to the worker).
    response = client.post(
        hit_links.url_for(assignment),
        {
            "passage": str(passage.pk),
            "question": "What are compounds that can accept electrons from other substances called?",
            "answer": "electron acceptors",
        },
    )
    assert response.status_code == 200 and b"Thank you" in response.content
    pair = QAPair.objects.get(assignment=assignment)

    def job_done() -> bool:
        return Assignment.objects.filter(pk=assignment.pk, followed_up_at__isnull=False).exists()

    assert _wait_for(job_done), "the after-submission job did not run on the Celery worker"
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED
    # The page ran SciQ QC and stored its flags with the pair; the job does not run it again.
    assert QAPair.objects.get(pk=pair.pk).qc_flags == ["answer_not_in_passage"]

    researcher = make_researcher()
    client.force_login(researcher)
    queue = client.get("/review/", {"flag": "answer_not_in_passage", "batch": batch.pk}).content.decode()
    assert "electron acceptors" in queue and f'value="{assignment.pk}"' in queue
    client.post("/review/decide/", {"assignment": [str(assignment.pk)], "action": "approve"})
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.APPROVED
    assert Payment.objects.filter(assignment=assignment, kind="reward").count() == 1
    assert QAPair.objects.get(pk=pair.pk).status == QAPair.Status.ACCEPTED
