"""A stage-2 HIT and its suggestions are stored together (annotation/services/validation_hits.py).

A suggester that fails leaves no HIT to hand out (the follow-up sweep re-queues the job); one that comes
back short is logged and the question is listed for the researcher.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from annotation import question_types as qt
from annotation.models import HIT, Batch, QAPair
from annotation.services.batches import BatchSpec, create_batch
from crowd.services import local_review as review
from crowd.services import validation_hits
from distractors.suggestion import ranked_suggestions
from tests.factories import make_textbook, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

PASSAGES = [
    "Mitochondria release energy from food molecules through cellular respiration in most cells.",
    "Chloroplasts are the organelles in which photosynthesis takes place in the leaves of plants.",
    "Enzymes are proteins that speed up chemical reactions in living things without being used up.",
]


def submitted_question(corpus: str = "demo-textbook") -> QAPair:
    """A published stage-1 batch on three passages and the author's submitted question on the first."""
    make_textbook(corpus, PASSAGES)
    stage1 = create_batch(BatchSpec(kind="sciq_question", corpus=corpus, limit=1))
    stage1.publish()
    assignment = claim_next(stage1, make_worker("author"))
    passage = assignment.hit.passages.order_by("pk").first()
    assignment.submit({"passage": str(passage.pk), "question": "Which organelles release energy?"})
    return QAPair.objects.create(
        corpus=stage1.corpus,
        assignment=assignment,
        passage=passage,
        question_type=qt.SCIQ,
        question="Which organelles release energy from food molecules in cells?",
        answer="mitochondria",
    )


class _Fixed:
    model_version = "fixed"

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def suggest(self, question: str, answer: str, top: int = 6) -> list[Any]:
        return ranked_suggestions(((w, 0.9) for w in self.words), top, source="fixed")


def test_add_validation_hit__suggester_fails__no_hit_is_left_to_offer(
    monkeypatch: pytest.MonkeyPatch, eager_celery: None, django_capture_on_commit_callbacks: Any
) -> None:
    pair = submitted_question()

    class Broken:
        model_version = "broken"

        def suggest(self, question: str, answer: str, top: int = 6) -> list[Any]:
            raise OSError("WordNet files missing")

    monkeypatch.setattr(validation_hits, "suggester", lambda: Broken())
    with pytest.raises(OSError), django_capture_on_commit_callbacks(execute=True):
        review.approve(pair.assignment)
    assert not HIT.objects.filter(qa_pair=pair).exists()


def test_add_validation_hit__short_list__logged_counted_and_listed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pair = submitted_question()
    monkeypatch.setattr(validation_hits, "suggester", lambda: _Fixed(["ribosomes", "nucleus"]))
    stage1 = pair.assignment.hit.batch
    with caplog.at_level(logging.WARNING, logger="crowd.services.validation_hits"):
        hit = validation_hits.add_validation_hit(validation_hits.stage2_batch_for(stage1), pair)
    pair.refresh_from_db()
    assert pair.metadata["suggestions"] == 2
    assert f"QAPair({pair.pk}): only 2 of 6 suggestions" in caplog.text
    assert validation_hits.short_of_suggestions(hit.batch) == [pair]


def test_add_validation_hit__twice__one_hit_and_six_suggestions(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = submitted_question()
    words = ["ribosomes", "nucleus", "chloroplasts", "vacuoles", "lysosomes", "centrioles"]
    monkeypatch.setattr(validation_hits, "suggester", lambda: _Fixed(words))
    stage2 = validation_hits.stage2_batch_for(pair.assignment.hit.batch)
    first = validation_hits.add_validation_hit(stage2, pair)
    again = validation_hits.add_validation_hit(stage2, pair)
    assert first.pk == again.pk and stage2.hits.count() == 1
    assert [d.text for d in validation_hits.suggestions_of(pair)] == sorted(words)
    assert validation_hits.short_of_suggestions(stage2) == []
    assert Batch.objects.get(pk=stage2.pk).status == Batch.Status.PUBLISHED
