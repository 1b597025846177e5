"""The SciQ artifact check on stage-2 items, stored: one :class:`annotation.models.OptionsOnlyCheck` per
validation, the pair flagged ``options_only`` for review when the model answered from the options alone,
and the rate per batch for the batch page.

The check (:mod:`evaluation.options_only`) runs on the ``gpu`` queue after each stage-2 submission
(``evaluation.tasks.gpu_options_only_check``: a transformer, CPU or GPU) and fails open: a model that
cannot load or score leaves the item unchecked and the submission as it was.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Optional

from django.conf import settings
from django.db import transaction

from annotation.models import Batch, OptionsOnlyCheck, QAPair, Validation
from annotation.qc.common import OPTIONS_ONLY, REVIEW

logger = logging.getLogger(__name__)

FLAG = OPTIONS_ONLY
"""The review flag an item answered from its options alone gives its pair (docs/reference/codes.md)."""


OFF = "off"
"""The value of ``CROWDQA_OPTIONS_ONLY_MODEL`` that turns the check off."""


def enabled() -> bool:
    """Whether stage-2 submissions get the check (``CROWDQA_OPTIONS_ONLY_MODEL`` is not ``off``)."""
    return str(getattr(settings, "CROWDQA_OPTIONS_ONLY_MODEL", "")).strip().lower() != OFF


def default_backend() -> Any:
    """The causal LM that scores the options: ``CROWDQA_OPTIONS_ONLY_MODEL``'s model directory, or the
    packaged SmolLM2-135M when unset."""
    return _backend(str(getattr(settings, "CROWDQA_OPTIONS_ONLY_MODEL", "")).strip())


@functools.lru_cache(maxsize=1)
def _backend(model_dir: str) -> Any:
    """The backend of one model, loaded once per worker process (a changed setting loads the new one)."""
    from evaluation.llm import HFCausalLMBackend

    backend = HFCausalLMBackend(model_dir or None)
    backend.load()
    return backend


def item_of(validation: Validation) -> tuple[str, str, list[str]]:
    """The item a validator made: the pair's question, its answer and the validator's distractors."""
    pair = validation.qa_pair
    distractors = [d.text for d in validation.distractors.filter(selected=True).order_by("position")]
    return pair.question, pair.normalized_answer or pair.answer, distractors


def check_validation(
    validation: Validation,
    loglikelihoods: Optional[Callable[[str, list[str]], list[float]]] = None,
    model_version: str = "",
) -> OptionsOnlyCheck:
    """Check one stage-2 item once (a later call returns the stored row) and flag its pair when answered.

    Raises:
        Exception: whatever loading or scoring raises (the job logs it and records nothing).
    """
    from evaluation.options_only import check_item

    existing = OptionsOnlyCheck.objects.filter(validation=validation).first()
    if existing is not None:
        return existing
    if loglikelihoods is None:
        backend = default_backend()
        loglikelihoods, model_version = backend.loglikelihoods, backend.name
    question, answer, distractors = item_of(validation)
    result = check_item(question, answer, distractors, loglikelihoods)
    with transaction.atomic():
        pair = QAPair.objects.select_for_update().filter(pk=validation.qa_pair_id).order_by("pk").first()
        check, created = OptionsOnlyCheck.objects.get_or_create(
            validation=validation,
            defaults={
                "qa_pair_id": validation.qa_pair_id,
                "model_version": model_version or "unnamed",
                "options": list(result.options),
                "scores": list(result.scores),
                "chosen": result.chosen,
                "chosen_per_char": result.chosen_per_char,
                "answered": result.answered,
                "latency_ms": result.latency_s * 1000,
            },
        )
        if created and check.answered and pair is not None and FLAG not in pair.qc_flags:
            pair.qc_flags = [*pair.qc_flags, FLAG]
            pair.qc_severity = {**pair.qc_severity, FLAG: REVIEW}
            pair.save(update_fields=["qc_flags", "qc_severity"])
    logger.info("Validation(%s): options-only check answered=%s", validation.pk, check.answered)
    return check


def check_submission(assignment_id: int) -> dict[str, Any]:
    """The job's body: check the stage-2 item of a submission; fail open (logged, ``unavailable``)."""
    validation = Validation.objects.select_related("qa_pair").filter(assignment=assignment_id).first()
    if validation is None:
        return {"assignment": assignment_id, "options_only": None}
    try:
        check = check_validation(validation)
    except Exception:  # noqa: BLE001 - the artifact check fails open: the item stays unchecked
        logger.exception("options-only check of Validation(%s) failed; left unchecked", validation.pk)
        return {"assignment": assignment_id, "options_only": "unavailable"}
    return {"assignment": assignment_id, "options_only": "answered" if check.answered else "not answered"}


def options_only_rates(batch: Batch) -> Optional[dict[str, Any]]:
    """The batch's checked stage-2 items, how many a model answered from the options alone, the rate and
    the models; None when none was checked."""
    rows = list(
        OptionsOnlyCheck.objects.filter(validation__assignment__hit__batch=batch).values_list(
            "answered", "model_version", "latency_ms"
        )
    )
    if not rows:
        return None
    answered = sum(1 for a, _m, _l in rows if a)
    validations = Validation.objects.filter(assignment__hit__batch=batch).count()
    return {
        "checked": len(rows),
        "answered": answered,
        "rate": answered / len(rows),
        "unchecked": max(0, validations - len(rows)),
        "models": sorted({m for _a, m, _l in rows}),
    }
