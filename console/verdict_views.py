"""Sending a batch's "fooled" model verdicts to a second worker, from the batch page."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotation.hits import handler_for
from annotation.models import Batch
from annotation.permissions import researcher_action


@require_POST
@researcher_action("launch")
def validate_verdicts(request: HttpRequest, pk: int) -> HttpResponse:
    """Put the batch's "fooled" pairs that no open validation batch holds into its validation batch
    (made on first use, as SciQ's stage 2: same platform and requirements), then show that batch.

    Security behavior: POST only with a CSRF token; needs the researcher ``launch`` permission (the
    refusal page otherwise, before anything is created). An unknown batch is a 404; a batch whose kind
    has no verdict validation (no model in the loop) creates nothing and says so. Repeating the post
    adds no HIT twice (the service locks the validation batch and skips pairs it holds).
    """
    from crowd.services.validation_hits import validate_fooled_verdicts

    batch = get_object_or_404(Batch, pk=pk)
    if handler_for(batch.kind).verdict_validation_kind is None:
        messages.error(request, "This batch's pairs have no model verdicts to validate.")
        return redirect("annotation:batch", pk=pk)
    child, added = validate_fooled_verdicts(batch)
    if added:
        messages.success(request, f"{added} fooled verdict{'s' if added != 1 else ''} sent for validation.")
    else:
        messages.info(request, "No fooled verdict is waiting: every one is in a validation batch already.")
    return redirect("annotation:batch", pk=child.pk)
