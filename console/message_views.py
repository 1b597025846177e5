"""Messaging a batch's workers from its page: every worker, or one chosen by pseudonym."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from annotation.models import Batch
from annotation.permissions import researcher_action
from crowd.models import Worker


@require_POST
@researcher_action("notify")
def batch_message(request: HttpRequest, pk: int) -> HttpResponse:
    """Send ``subject`` and ``message`` to the batch's workers (``to`` = ``all``) or to one of them
    (``to`` = a worker's id). Local workers read it on their home page; a platform's workers get it
    through the platform.

    Security behavior: POST only with a CSRF token; needs the researcher ``notify`` permission (the
    refusal page otherwise, before anything is stored or sent). A chosen worker must have worked in
    this batch (any other id is refused), so the form cannot reach workers of other batches or
    platforms; the text is length-checked by the service and escaped where it is shown.
    """
    from crowd.services.messaging import message_worker
    from crowd.services.review import ReviewError, notify_batch_workers

    batch = get_object_or_404(Batch, pk=pk)
    subject, text = request.POST.get("subject", ""), request.POST.get("message", "")
    to = request.POST.get("to", "all")
    try:
        if to == "all":
            count = notify_batch_workers(batch, subject, text)
            messages.success(request, f"Message sent to {count} worker{'s' if count != 1 else ''}.")
        else:
            worker = Worker.objects.filter(pk=int(to) if to.isdecimal() and to.isascii() else 0).first()
            if worker is None:
                raise ReviewError("Choose a worker of this batch.")
            message_worker(worker, batch, subject, text)
            messages.success(request, f"Message sent to {worker.pseudonym}.")
    except ReviewError as exc:
        messages.error(request, f"No message was sent: {exc}")
    return redirect("annotation:batch", pk=pk)
