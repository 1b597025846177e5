"""A SciQ stage-2 collection in the database: real SciQ questions, validated by simulated workers.

Each question is a stage-1 QA pair (written by one worker, approved); its stage-2 HIT holds one
submitted assignment per validator, with a :class:`~annotation.models.Validation` whose flags follow the
simulated label (``reject`` raises ``false_answer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from annotation import question_types as qt
from annotation.models import HIT, Assignment, Batch, Corpus, QAPair, Validation
from crowd.aggregation import REJECT, Judgement
from crowd.models import Worker
from crowd.simulation import SimItem
from tests.factories import make_batch, make_corpus


@dataclass
class Collection:
    stage1: Batch
    stage2: Batch
    pairs: dict[str, QAPair]  # simulated item id -> pair
    workers: dict[str, Worker]  # simulated worker name -> worker


def build_collection(
    items: Sequence[SimItem], judgements: Sequence[Judgement], corpus_name: str = "sim"
) -> Collection:
    corpus = make_corpus(name=corpus_name, kind=Corpus.Kind.TEXTBOOK)
    stage1 = make_batch(corpus, name="stage 1", kind=Batch.Kind.SCIQ_QUESTION)
    stage2 = make_batch(corpus, name="stage 2", kind=Batch.Kind.SCIQ_DISTRACTOR, parent=stage1)
    writer = Worker.objects.get_or_create_for("local", "writer")
    pairs: dict[str, QAPair] = {}
    hits: dict[str, HIT] = {}
    for position, item in enumerate(items):
        hit1 = HIT.objects.create(batch=stage1, position=position)
        written = Assignment.objects.create(hit=hit1, worker=writer, status=Assignment.Status.APPROVED)
        pair = QAPair.objects.create(
            corpus=corpus,
            assignment=written,
            question_type=qt.SCIQ,
            question=item.question,
            answer=item.answer,
            status=QAPair.Status.ACCEPTED,
        )
        pairs[item.id] = pair
        hits[item.id] = HIT.objects.create(batch=stage2, position=position, qa_pair=pair, max_assignments=5)
    for batch in (stage1, stage2):
        batch.publish()
    workers: dict[str, Worker] = {}
    for judgement in judgements:
        worker = workers.get(judgement.worker)
        if worker is None:
            worker = workers[judgement.worker] = Worker.objects.get_or_create_for("local", judgement.worker)
        assignment = Assignment.objects.create(
            hit=hits[judgement.item], worker=worker, status=Assignment.Status.SUBMITTED
        )
        Validation.objects.create(
            assignment=assignment,
            qa_pair=pairs[judgement.item],
            flags=["false_answer"] if judgement.label == REJECT else [],
        )
    return Collection(stage1, stage2, pairs, workers)
