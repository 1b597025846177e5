"""Celery jobs of the model in the loop (default queue; ``gpu_*`` on the gpu queue): a light module, so the
web process can queue them.

Thin, as every task module: :mod:`evaluation.services.model_checks` does the work. Both jobs are
idempotent (a check is kept per assignment and card, a linked pair is left alone) and bounded by
Celery's time limits; a failure leaves the card without a check, which the page shows as "no model
answer" and the batch page counts as unchecked.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Assignment
from config.jobs import shared_task

#: Seconds a job may run: a cold BM25 index for a long syllabus is built in well under this.
SOFT_LIMIT_S = 60
#: Seconds a ``gpu_*`` check of a card may run: the first one of a worker process loads the LLM.
GPU_SOFT_LIMIT_S = 180
#: Systems and judges that run a language model (:mod:`evaluation.model_in_the_loop`; named here so the
#: web process queues without importing the model module).
GPU_SYSTEMS = frozenset({"rag"})
GPU_JUDGES = frozenset({"fact_qa"})


@shared_task(
    name="evaluation.loop_tasks.model_check_card",
    acks_late=True,
    soft_time_limit=SOFT_LIMIT_S,
    time_limit=SOFT_LIMIT_S + 10,
)
def model_check_card(assignment_id: int, position: int, question: str, answer: str) -> str:
    """Ask the batch's model about one card as the HIT page had it; returns the verdict or ``unavailable``."""
    return _check_card(assignment_id, position, question, answer)


@shared_task(
    name="evaluation.loop_tasks.gpu_model_check_card",
    acks_late=True,
    soft_time_limit=GPU_SOFT_LIMIT_S,
    time_limit=GPU_SOFT_LIMIT_S + 10,
)
def gpu_model_check_card(assignment_id: int, position: int, question: str, answer: str) -> str:
    """:func:`model_check_card` for a system that runs an LLM (``gpu`` queue)."""
    return _check_card(assignment_id, position, question, answer)


def _check_card(assignment_id: int, position: int, question: str, answer: str) -> str:
    from evaluation.services.model_checks import check_card

    assignment = Assignment.objects.select_related("hit__batch", "hit__document").get(pk=assignment_id)
    check = check_card(assignment, position, question, answer)
    return check.verdict if check else "unavailable"


def _on_gpu(system: str, judge: str) -> bool:
    return system in GPU_SYSTEMS or judge in GPU_JUDGES


def card_task(system: str, judge: str = "lexical") -> Any:
    """The job that checks a card for ``system`` and ``judge``: the ``gpu`` one when either runs an LLM,
    else the default one."""
    return gpu_model_check_card if _on_gpu(system, judge) else model_check_card


def submission_task(system: str, judge: str = "lexical") -> Any:
    """The job that checks a submission (as :func:`card_task`)."""
    return gpu_model_check_submission if _on_gpu(system, judge) else model_check_submission


@shared_task(
    name="evaluation.loop_tasks.model_check_submission",
    acks_late=True,
    soft_time_limit=SOFT_LIMIT_S * 5,
    time_limit=SOFT_LIMIT_S * 5 + 10,
)
def model_check_submission(assignment_id: int) -> dict[str, int]:
    """Give each stored pair of a syllabus submission its check (the page's, or one asked now); when the
    batch's option says ``validate``, its "fooled" pairs then go to its validation batch."""
    return _check_submission(assignment_id)


@shared_task(
    name="evaluation.loop_tasks.gpu_model_check_submission",
    acks_late=True,
    soft_time_limit=GPU_SOFT_LIMIT_S * 5,
    time_limit=GPU_SOFT_LIMIT_S * 5 + 10,
)
def gpu_model_check_submission(assignment_id: int) -> dict[str, int]:
    """:func:`model_check_submission` for a system that runs an LLM (``gpu`` queue)."""
    return _check_submission(assignment_id)


def _check_submission(assignment_id: int) -> dict[str, int]:
    from evaluation.services.model_checks import record_submission, validate_after_submission

    counts = record_submission(assignment_id)
    counts.update(validate_after_submission(assignment_id))
    return counts


@shared_task(name="evaluation.loop_tasks.requeue_unchecked_submissions", acks_late=True)
def requeue_unchecked_submissions() -> dict[str, list[int]]:
    """Queue again the model checks that never ran (the broker was down at submit; periodic)."""
    from evaluation.services.model_checks import requeue_unchecked

    return {"assignments": requeue_unchecked()}


@shared_task(
    name="evaluation.loop_tasks.gpu_options_only_check",
    acks_late=True,
    soft_time_limit=SOFT_LIMIT_S * 5,
    time_limit=SOFT_LIMIT_S * 5 + 10,
)
def gpu_options_only_check(assignment_id: int) -> dict[str, Any]:
    """The SciQ artifact check of a stage-2 submission's item (``gpu`` queue: a transformer scores the
    options); fails open."""
    from evaluation.services.options_only import check_submission

    return check_submission(assignment_id)
