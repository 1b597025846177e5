"""Database side of the filters app: run the pure sentence filter and QC over stored rows.

The rules live in ``filters.sentence_filter`` / ``filters.qc`` (no Django); this module loads rows,
calls them and saves verdicts, in chunks, so a job can report progress and resume after a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Optional

from django.db import transaction
from django.utils import timezone

from annotation import question_types as qt
from annotation.models import Corpus, OptionsOnlyCheck, Passage, QAPair
from annotation.qc.common import OPTIONS_ONLY, SEVERITY, severities_of
from annotation.qc.sciq import SciQItem, SciQOptions
from annotation.qc.syllabusqa import SyllabusQAPair
from filters.qc import run_qc
from filters.sentence_rules import FilterOptions

logger = logging.getLogger(__name__)

#: Passages judged per transaction; a crash loses at most one chunk of work.
CHUNK = 500


def filter_corpus(
    corpus: Corpus,
    options: Optional[FilterOptions] = None,
    refilter: bool = False,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> dict[str, Any]:
    """Judge a corpus's passages and store each verdict with the rule codes behind it.

    Resumable: only passages still ``pending`` are judged unless ``refilter`` is set, and verdicts are
    saved chunk by chunk, so re-running after a crash continues where it stopped.

    Returns:
        counts of passages judged now, accepted and rejected in the corpus, and rule frequencies.
    """
    # spaCy (and torch under it) only where passages are judged, not in every process that runs QC.
    from filters import sentence_filter

    options = options or FilterOptions()
    queryset = corpus.passages.order_by("pk")
    if refilter:
        queryset.update(filter_status=Passage.FilterStatus.PENDING)
    pending_ids = list(
        queryset.filter(filter_status=Passage.FilterStatus.PENDING).values_list("pk", flat=True)
    )
    total = len(pending_ids)
    rule_counts: dict[str, int] = {}
    done = 0
    progress(0, total)
    for start in range(0, total, CHUNK):
        chunk = list(Passage.objects.filter(pk__in=pending_ids[start : start + CHUNK]).order_by("pk"))
        now = timezone.now()
        verdicts = sentence_filter.judge_passages([p.text for p in chunk], options)
        for passage, verdict in zip(chunk, verdicts, strict=True):
            passage.filter_status = (
                Passage.FilterStatus.ACCEPTED if verdict.accepted else Passage.FilterStatus.REJECTED
            )
            passage.filter_reasons = list(verdict.reasons) + sorted(verdict.rule_counts)
            passage.filtered_at = now
            for code, n in verdict.rule_counts.items():
                rule_counts[code] = rule_counts.get(code, 0) + n
        with transaction.atomic():
            Passage.objects.bulk_update(chunk, ["filter_status", "filter_reasons", "filtered_at"])
        done += len(chunk)
        progress(done, total)
    status_counts = dict(corpus.passages.order_by().values_list("filter_status").annotate(n=_count()))
    return {
        "corpus": corpus.name,
        "judged": done,
        "accepted": status_counts.get(Passage.FilterStatus.ACCEPTED, 0),
        "rejected": status_counts.get(Passage.FilterStatus.REJECTED, 0),
        "pending": status_counts.get(Passage.FilterStatus.PENDING, 0),
        "sentence_rule_counts": dict(sorted(rule_counts.items())),
    }


def _count() -> Any:
    from django.db.models import Count

    return Count("pk")


def _final_distractors(qa: QAPair) -> list[Any]:
    """The distractors a SciQ pair is released with: the source's, or the latest validation's.

    Several stage-2 workers may validate one pair, each choosing their own three; QC judges the newest.
    """
    chosen = [d for d in qa.distractors.all() if d.selected]
    validations = [d.validation_id for d in chosen if d.validation_id is not None]
    if validations:
        latest = max(validations)
        chosen = [d for d in chosen if d.validation_id == latest]
    return chosen


def awaits_distractors(qa: QAPair) -> bool:
    """True for a crowd-written SciQ question that no stage-2 worker has validated yet."""
    return (
        qa.question_type == qt.SCIQ
        and qa.assignment_id is not None
        and not any(d.selected for d in qa.distractors.all())
    )


def qc_records_for(pairs: Iterable[QAPair]) -> tuple[list[SyllabusQAPair | SciQItem], dict[str, str]]:
    """Turn stored QA pairs into QC inputs plus the syllabus texts they refer to."""
    records: list[SyllabusQAPair | SciQItem] = []
    documents: dict[str, str] = {}
    for qa in pairs:
        pair_id = qa.external_id or str(qa.pk)
        if qa.question_type == qt.SCIQ:
            distractors = _final_distractors(qa)
            records.append(
                SciQItem(
                    id=pair_id,
                    question=qa.question,
                    answer=qa.answer,
                    passage=qa.passage.text if qa.passage_id else "",
                    distractors=tuple(d.text for d in distractors),
                    worker_distractors=tuple(d.text for d in distractors if d.origin == "worker")
                    if qa.assignment_id
                    else None,
                )
            )
        else:
            name = qa.document.name if qa.document_id else ""
            if qa.document_id:
                documents[name] = qa.document.text
            worker = qa.assignment.worker.pseudonym if qa.assignment_id else None
            records.append(
                SyllabusQAPair(
                    id=pair_id,
                    syllabus_name=name,
                    question_type=qa.question_type,
                    question=qa.question,
                    answer=qa.answer,
                    answer_spans=tuple(s.text for s in qa.spans.all()),
                    reasoning_steps=tuple(s.text for s in qa.steps.all()),
                    worker_id=worker,
                )
            )
    return records, documents


def qc_queryset(pairs: Any, save: bool = True) -> list[dict[str, Any]]:
    """Run heuristic QC over stored QA pairs; with ``save`` store flags and normalized answers."""
    pairs = list(
        pairs.select_related("document", "passage", "assignment__worker").prefetch_related(
            "spans", "steps", "distractors"
        )
    )
    # Stage-1 SciQ questions have no distractors yet: their distractor checks wait for stage 2.
    waiting = [qa for qa in pairs if awaits_distractors(qa)]
    complete = [qa for qa in pairs if not awaits_distractors(qa)]
    by_pk: dict[int, dict[str, Any]] = {}
    for group, options in ((complete, SciQOptions()), (waiting, SciQOptions(check_distractors=False))):
        if group:
            records, documents = qc_records_for(group)
            for qa, result in zip(group, run_qc(records, documents, sciq_options=options), strict=True):
                by_pk[qa.pk] = result
    results = [by_pk[qa.pk] for qa in pairs]
    if save:
        # A stored check's review flag is not QC's to drop: a model answered the item from its options.
        answered = set(
            OptionsOnlyCheck.objects.filter(qa_pair__in=[qa.pk for qa in pairs], answered=True).values_list(
                "qa_pair_id", flat=True
            )
        )
        for qa, result in zip(pairs, results, strict=True):
            qa.qc_flags = list(result["flags"])
            qa.qc_severity = severities_of(result["issues"])
            if qa.pk in answered and OPTIONS_ONLY not in qa.qc_flags:
                qa.qc_flags.append(OPTIONS_ONLY)
                qa.qc_severity[OPTIONS_ONLY] = SEVERITY[OPTIONS_ONLY]
            qa.normalized_answer = result.get("normalized_answer") or ""
        with transaction.atomic():
            QAPair.objects.bulk_update(
                pairs, ["qc_flags", "qc_severity", "normalized_answer"], batch_size=1000
            )
    return results
