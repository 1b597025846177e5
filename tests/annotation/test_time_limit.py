"""The time limit a worker sees comes from one place, the batch; it is never shorter than the typical time."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from annotation.services.batches import BatchSpec, BatchSpecError, create_batch, typical_minutes
from crowd.models import Consent
from tests.factories import make_corpus, make_document, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def test_create_batch__limit_shorter_than_the_typical_time_is_refused() -> None:
    make_document(make_corpus(name="syl"), name="bio101")
    low, high = typical_minutes("syllabus_qa")
    assert (low, high) == (60, 90)  # the SyllabusQA instructions: "You'll spend 60-90 minutes"
    with pytest.raises(BatchSpecError, match="at least 90 minutes"):
        create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", time_limit_minutes=60))
    assert create_batch(BatchSpec(kind="syllabus_qa", corpus="syl")).time_limit_minutes == 120
    exact = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", time_limit_minutes=90))
    assert exact.time_limit_minutes == 90


def test_consent_instructions_and_timer_show_the_batchs_limit(client) -> None:  # type: ignore[no-untyped-def]
    make_document(make_corpus(name="syl"), name="bio101")
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", time_limit_minutes=150))
    batch.publish()
    assignment = claim_next(batch, make_worker("a"))
    url = hit_links.url_for(assignment)
    note = "usually takes 60 to 90 minutes. You have 150 minutes from accepting it"
    consent = client.get(url).content.decode()
    assert note in consent and "60 to 90 minutes" not in consent.replace(note, "")
    Consent.objects.create(worker=assignment.worker, batch=batch)
    task = client.get(url).content.decode()
    assert note in task  # the Instructions dialog
    expires = re.search(r'data-expires-at="([^"]+)"', task)
    assert expires is not None
    left = datetime.fromisoformat(expires.group(1)) - assignment.accepted_at
    assert round(left.total_seconds() / 60) == 150
