"""The three kinds of HIT page, one handler each, looked up by batch kind."""

from __future__ import annotations

from annotation.hits.base import FormCheck, HitConflict, HitHandler
from annotation.models import Batch


def handler_for(kind: str) -> HitHandler:
    """Return the handler of a batch kind (screening: the syllabus QA HIT plus a quiz).

    Raises:
        KeyError: for an unknown kind.
    """
    from annotation.hits.expert_answer import ExpertAnswerHandler
    from annotation.hits.sciq_distractor import SciQDistractorHandler
    from annotation.hits.sciq_question import SciQQuestionHandler
    from annotation.hits.syllabus_qa import ScreeningHandler, SyllabusQAHandler

    handlers: dict[str, type[HitHandler]] = {
        Batch.Kind.SYLLABUS_QA: SyllabusQAHandler,
        Batch.Kind.SCREENING: ScreeningHandler,
        Batch.Kind.SCIQ_QUESTION: SciQQuestionHandler,
        Batch.Kind.SCIQ_DISTRACTOR: SciQDistractorHandler,
        Batch.Kind.EXPERT_ANSWER: ExpertAnswerHandler,
    }
    return handlers[kind]()


__all__ = ["FormCheck", "HitConflict", "HitHandler", "handler_for"]
