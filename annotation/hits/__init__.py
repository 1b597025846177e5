"""One handler per batch kind: its HIT page and the facts about the kind that other modules act on.

Code outside this package asks ``handler_for(batch.kind)`` (or ``kinds_where`` in a query) rather than
comparing kinds; ``tests/test_hit_kinds.py`` keeps it so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from annotation.hits.base import BuiltFrom, FormCheck, HitConflict, HitHandler
from annotation.models import Batch


def handler_for(kind: str) -> HitHandler:
    """Return the handler of a batch kind (screening: the syllabus QA HIT plus a quiz).

    Raises:
        KeyError: for an unknown kind.
    """
    return _handler_classes()[kind]()


@functools.cache
def _handler_classes() -> dict[str, type[HitHandler]]:
    """Each batch kind's handler class, built on first use (the handlers' modules import this one);
    every request on a HIT link asks for its handler, so the mapping is built once per process."""
    from annotation.hits.expert_answer import ExpertAnswerHandler
    from annotation.hits.sciq_distractor import SciQDistractorHandler
    from annotation.hits.sciq_question import SciQQuestionHandler
    from annotation.hits.syllabus_qa import ScreeningHandler, SyllabusQAHandler
    from annotation.hits.verdict_validation import VerdictValidationHandler

    return {
        Batch.Kind.SYLLABUS_QA: SyllabusQAHandler,
        Batch.Kind.SCREENING: ScreeningHandler,
        Batch.Kind.SCIQ_QUESTION: SciQQuestionHandler,
        Batch.Kind.SCIQ_DISTRACTOR: SciQDistractorHandler,
        Batch.Kind.EXPERT_ANSWER: ExpertAnswerHandler,
        Batch.Kind.VERDICT_VALIDATION: VerdictValidationHandler,
    }


def kinds_where(test: Callable[[HitHandler], bool]) -> list[str]:
    """The batch kinds whose handler passes ``test``, in ``Batch.Kind`` order (for queries such as
    "every batch that qualifies workers")."""
    return [kind for kind in Batch.Kind.values if test(handler_for(kind))]


__all__ = ["BuiltFrom", "FormCheck", "HitConflict", "HitHandler", "handler_for", "kinds_where"]
