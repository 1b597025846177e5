"""Quick export of one batch's submitted work (CSV or JSONL), for pilots: no release, no splits.

Why: after a pilot a researcher wants the raw submissions in a spreadsheet at once; a versioned release
(with splits, card and checks) is the wrong tool for that. One row per QA pair (or per submission that
wrote none: validations, rejected passages), with the submission's status and the worker's pseudonym.

Security behavior: the researcher ``view`` permission (or the demo's public dashboard) is needed, as for
the batch page that shows the same data; workers appear by pseudonym only, never by platform id; CSV
cells a spreadsheet would run as a formula are neutralised (:func:`exports.writers.neutralise_formula`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_safe

from annotation.models import Assignment, Batch
from annotation.permissions import can_view

COLUMNS = (
    "batch",
    "submission",
    "worker",
    "status",
    "submitted_at",
    "seconds_on_task",
    "document",
    "position",
    "question_type",
    "question",
    "answer",
    "answer_spans",
    "reasoning_steps",
    "qc_flags",
    "validation_flags",
    "distractors",
)


def rows(batch: Batch) -> Iterator[dict[str, Any]]:
    """One dict per QA pair of the batch's submitted work (or per submission without pairs)."""
    assignments = (
        Assignment.objects.filter(hit__batch=batch)
        .exclude(submitted_at__isnull=True)
        .select_related("worker", "hit__document")
        .prefetch_related("qa_pairs__spans", "qa_pairs__steps", "validation__distractors")
        .order_by("submitted_at", "pk")
    )
    for a in assignments.iterator(chunk_size=200):
        base = {
            "batch": batch.pk,
            "submission": a.pk,
            "worker": a.worker.pseudonym,
            "status": a.status,
            "submitted_at": a.submitted_at.isoformat() if a.submitted_at else "",
            "seconds_on_task": a.time_on_task_seconds,
            "document": a.hit.document.name if a.hit.document else "",
        }
        validation = getattr(a, "validation", None) if hasattr(a, "validation") else None
        extra = {
            "validation_flags": list(validation.flags) if validation else [],
            "distractors": [d.text for d in validation.distractors.all()] if validation else [],
        }
        pairs = list(a.qa_pairs.all())
        if not pairs:
            yield {**base, **extra}
        for pair in pairs:
            yield {
                **base,
                "position": pair.position,
                "question_type": pair.question_type,
                "question": pair.question,
                "answer": pair.answer,
                "answer_spans": [s.text for s in pair.spans.all()],
                "reasoning_steps": [s.text for s in pair.steps.all()],
                "qc_flags": list(pair.qc_flags or []),
                **extra,
            }


def _csv(batch: Batch) -> Iterator[str]:
    # exports.writers brings pyarrow (Parquet); a web process loads it only when a CSV is asked for.
    from exports.writers import neutralise_formula

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for row in rows(batch):
        values = []
        for column in COLUMNS:
            value = row.get(column, "")
            if isinstance(value, list):
                value = " | ".join(str(v) for v in value)
            values.append("" if value is None else neutralise_formula(value))
        writer.writerow(values)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _jsonl(batch: Batch) -> Iterator[str]:
    for row in rows(batch):
        yield json.dumps({c: row.get(c) for c in COLUMNS}, ensure_ascii=False) + "\n"


@require_safe
def batch_export(request: HttpRequest, pk: int, fmt: str) -> StreamingHttpResponse:
    """Stream the batch's submissions as ``csv`` or ``jsonl`` (see the module's security behaviour)."""
    if not can_view(request):
        raise Http404("No such batch")
    batch = get_object_or_404(Batch, pk=pk)
    if fmt == "csv":
        response = StreamingHttpResponse(_csv(batch), content_type="text/csv; charset=utf-8")
    elif fmt == "jsonl":
        response = StreamingHttpResponse(_jsonl(batch), content_type="application/x-ndjson; charset=utf-8")
    else:
        raise Http404(f"No export format {fmt!r}")
    response["Content-Disposition"] = content_disposition_header(True, f"batch-{batch.pk}-submissions.{fmt}")
    return response
