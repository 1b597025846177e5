"""Fixtures shared by the annotation app's researcher-page tests."""

from __future__ import annotations

import pytest

from annotation.models import AnswerSpan, Assignment, QAPair
from annotation.services.batches import BatchSpec, create_batch
from tests.factories import make_corpus, make_document, make_worker
from worker.assigning import claim_next

TEXT = "Grading: exams 60%, labs 40%.\nLate work loses 10% per day.\n"


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
