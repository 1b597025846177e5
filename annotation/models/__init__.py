"""The annotation domain: corpora, documents, passages, batches, HITs, assignments and what workers write.

Data flows one way (docs/design.md): import -> filter -> HITs -> assignments -> QA pairs -> QC -> review ->
release -> evaluation. State changes are named methods (``assignment.submit()``) that check the
transition and raise :class:`IllegalTransition`; ``save()`` never hides side effects.

The models live in one module per part of that flow (:mod:`.corpus`, :mod:`.work`, :mod:`.answers`,
:mod:`.model_checks`, :mod:`.gold`, :mod:`.jobs`); import them from here, the app's single import point.
"""

from __future__ import annotations

from annotation.models.answers import (
    QUESTION_TYPE_CHOICES,
    AnswerSpan,
    Distractor,
    ExpertAnswer,
    QAPair,
    ReasoningStep,
    ScreeningGrade,
    Validation,
)
from annotation.models.corpus import MAX_CROWD_REJECTIONS, Corpus, Document, Passage, sha256_text
from annotation.models.gold import GoldAnswer, GoldItem, GoldStanding
from annotation.models.jobs import Job
from annotation.models.model_checks import ModelCheck, OptionsOnlyCheck
from annotation.models.work import HIT, Assignment, Batch, IllegalTransition
from annotation.platforms import Platform

__all__ = [
    "HIT",
    "MAX_CROWD_REJECTIONS",
    "QUESTION_TYPE_CHOICES",
    "AnswerSpan",
    "Assignment",
    "Batch",
    "Corpus",
    "Distractor",
    "Document",
    "ExpertAnswer",
    "GoldAnswer",
    "GoldItem",
    "GoldStanding",
    "IllegalTransition",
    "Job",
    "ModelCheck",
    "OptionsOnlyCheck",
    "Passage",
    "Platform",
    "QAPair",
    "ReasoningStep",
    "ScreeningGrade",
    "Validation",
    "sha256_text",
]
