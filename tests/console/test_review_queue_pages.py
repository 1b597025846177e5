"""The bulk review queue is paginated with each submission folded, and links to the side-by-side compare."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotation import question_types as qt
from annotation.models import QAPair
from annotation.services.batches import BatchSpec, create_batch
from tests.factories import make_corpus, make_document, make_researcher, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def submissions(documents: int, workers: int) -> list[Any]:
    """``workers`` submissions with one QA pair each on every one of ``documents`` syllabi."""
    corpus = make_corpus(name="syl")
    for d in range(documents):
        make_document(corpus, name=f"course-{d:02d}", text=f"Office hours are on day {d}.", page_starts=[0])
    batch = create_batch(BatchSpec(kind="syllabus_qa", corpus="syl", assignments=workers, reward_cents=0))
    batch.publish()
    out = []
    for w in range(workers):
        worker = make_worker(f"cmp-worker-{w}")
        for _ in range(documents):
            assignment = claim_next(batch, worker)
            assignment.submit({"qa-0-question": "When?"})
            QAPair.objects.create(
                corpus=corpus,
                document=assignment.hit.document,
                assignment=assignment,
                position=0,
                question_type=qt.SINGLE_FACTUAL,
                question=f"When are office hours ({w})?",
                answer=f"Day {w}",
            )
            out.append(assignment)
    return out


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("r"))
    return client


def test_queue__paginated_and_folded(researcher: Client) -> None:
    submissions(documents=25, workers=1)
    first = researcher.get("/review/").content.decode()
    assert first.count('class="card queue-item"') == 20 and "page 1 of 2" in first
    assert '<details class="queue-pairs"><summary>1 QA pair</summary>' in first
    second = researcher.get("/review/?status=submitted&page=2").content.decode()
    assert second.count('class="card queue-item"') == 5 and 'rel="prev"' in second
    assert researcher.get("/review/?page=999").status_code == 200  # past the end: the last page
    assert researcher.get("/review/?page=abc").status_code == 200


def test_compare__workers_of_one_hit_side_by_side(client: Client, researcher: Client) -> None:
    done = submissions(documents=1, workers=3)
    hit = done[0].hit
    queue = researcher.get("/review/").content.decode()
    assert f'href="/review/compare/{hit.pk}/"' in queue and "Compare the 3 workers" in queue
    html = researcher.get(f"/review/compare/{hit.pk}/").content.decode()
    for w, assignment in enumerate(done):
        assert assignment.worker.pseudonym in html and f"When are office hours ({w})?" in html
        assert assignment.worker.platform_id not in html
    assert client.get(f"/review/compare/{hit.pk}/").status_code == 302  # anonymous: sign in first
    assert researcher.get("/review/compare/999999/").status_code == 404
