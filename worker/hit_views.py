"""Worker-facing HIT pages: arrival from MTurk / Prolific, the assignment page, drafts, return, consent.

Security behavior: an assignment page is reached only through its signed link
(:mod:`worker.hit_links`), which identifies the worker; no login, session or CSRF cookie is needed,
because MTurk shows the page in a third-party iframe where browsers drop such cookies (the views are
therefore ``csrf_exempt``, and frameable by MTurk's hosts only, :mod:`worker.framing`: the
unguessable link is the credential). A
link stops accepting answers once its assignment is submitted, returned or expired. Platform arrivals
(``/hit/<batch>/``) create the worker and the assignment from the platform's URL parameters. Local
workers reach their links through the logged-in pages in :mod:`worker.worker_views`. Worker-written
text shown to another worker goes through the templates' autoescaping.
"""

from __future__ import annotations

import logging
from typing import Any, Optional

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import patch_cache_control
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from annotation.active_time import MS_FIELD, PAGE_FIELD, parse_report
from annotation.drafts import REVISIONS_FIELD, parse_revisions
from annotation.hits import FormCheck, HitConflict, HitHandler, handler_for
from annotation.models import HIT, Assignment, Batch, Document, IllegalTransition
from annotation.permissions import can_view
from config.request_guard import client_ip
from crowd.models import BatchPlatformState, Consent
from crowd.providers.factory import config_from
from crowd.providers.traits import arriving, completion_for, traits_for
from evaluation.services.model_checks import PAGE_WAIT_S, loop_settings
from evaluation.services.options_only import enabled as options_only_enabled
from worker import admission, assigning, hit_links
from worker.framing import platform_frameable
from worker.task_templates import ENGINE, message_page

logger = logging.getLogger(__name__)


def _page_context(
    hit: HIT, handler: HitHandler, assignment: Optional[Assignment], check: Optional[FormCheck] = None
) -> dict[str, Any]:
    """Everything ``hit_base.html`` and the handler's template render."""
    fields = check.fields if check else (assignment.draft if assignment else {})
    token = hit_links.token_for(assignment) if assignment else hit_links.preview_token_for(hit)
    return {
        "hit": hit,
        "batch": hit.batch,
        "assignment": assignment,
        "preview": assignment is None,
        "platform_traits": traits_for(hit.batch.provider),
        "token": token,
        "fields": fields,
        "errors": check.errors if check else {},
        "warnings": check.warnings if check else {},
        "tutorial": handler.tutorial(),
        "model_loop": _model_loop(hit, assignment),
        **handler.context(hit, assignment, token),
    }


def _task_page(
    request: HttpRequest,
    hit: HIT,
    handler: HitHandler,
    assignment: Optional[Assignment],
    check: Optional[FormCheck] = None,
) -> HttpResponse:
    """The HIT's task page: the handler's template, rendered by the task pages' Jinja2 engine
    (``worker/task_templates.py``)."""
    context = _page_context(hit, handler, assignment, check)
    return render(request, handler.template_name, context, using=ENGINE)


def _model_loop(hit: HIT, assignment: Optional[Assignment]) -> Optional[dict[str, Any]]:
    """What the syllabus cards' model check needs on the page, or None (no model, or a preview)."""
    loop = loop_settings(hit.batch) if assignment is not None else None
    if loop is None:
        return None
    return {"mode": loop.mode, "system": loop.system, "wait_ms": int(PAGE_WAIT_S * 1000)}


#: How long a browser keeps a kind's tutorial before asking again (its ETag makes the new request cheap).
TUTORIAL_MAX_AGE = 3600


@require_GET
def tutorial(request: HttpRequest, kind: str) -> HttpResponse:
    """The instructions and worked examples of a HIT kind, served once and cached by the browser.

    Every HIT page of a kind shows the same tutorial, so the page carries only its title and time note
    and its Instructions dialog fetches this body (``?part=1``); without that parameter it is a page of
    its own, the dialog's link where scripts do not run. Public caching is safe: the response is the
    same for everyone.

    Security behavior: read-only and the same for every visitor (no assignment, worker, session or
    batch is read), so it needs no signed link; an unknown kind is a 404.
    """
    try:
        handler = handler_for(kind)
    except KeyError:
        raise Http404("No such kind of HIT.") from None
    template = "hits/tutorial.html" if request.GET.get("part") else "hits/tutorial_page.html"
    response = render(request, template, {"tutorial": handler.tutorial()}, using=ENGINE)
    patch_cache_control(response, public=True, max_age=TUTORIAL_MAX_AGE)
    return response


@require_GET
@platform_frameable
def arrive(request: HttpRequest, batch_id: int) -> HttpResponse:
    """A worker arrives from MTurk (``assignmentId``...) or Prolific (``PROLIFIC_PID``...).

    MTurk previews render the task read-only; accepted assignments and Prolific arrivals create the
    worker and the assignment, then redirect to the assignment's signed link.

    Security behavior: everything is decided by the admission rule
    (:func:`worker.admission.admit_arrival`): only the batch's own platform, only its HITs
    or study, the platform's session id as the credential (a worker id alone opens nothing; each
    MTurk ``assignmentId`` is a session of its own that never takes over another, and counts for
    slots only once MTurk vouched for it, and for the worker's cap before that only on arrivals from
    the same client address), ``turkSubmitTo`` only on MTurk's worker hosts,
    and slots, caps, qualifications and own-question exclusion under the HIT's row lock. Refusals are
    4xx pages that say why.
    """
    batch = get_object_or_404(Batch, pk=batch_id)
    try:
        arrival = admission.parse(request.GET)
        if arrival is None:
            if request.user.is_authenticated and hasattr(request.user, "worker"):
                return redirect("worker:home")
            return message_page(
                request,
                "Sign in to work",
                f"Open this task from {' or '.join(traits.label for traits in arriving())}, "
                "or use the invite link a researcher sent you.",
                status=403,
            )
        admitted = admission.admit_arrival(batch, arrival, client_ip(request))
    except admission.Refused as exc:
        return message_page(request, "Not available", str(exc), status=exc.status)
    if admitted.assignment is None:
        handler = handler_for(batch.kind)
        return _task_page(request, admitted.hit, handler, None)
    return redirect(hit_links.url_for(admitted.assignment))


def _admitted(request: HttpRequest, token: str, passages: bool = False) -> Assignment | HttpResponse:
    """The assignment a signed link names when the admission rule still admits its worker, else a page
    (with ``passages``, the HIT's passages read with it: :func:`hit_links.assignment_for`)."""
    assignment = hit_links.assignment_for(token, passages=passages)
    try:
        return admission.admit_link(assignment)
    except admission.Refused as exc:
        return message_page(request, "Not available", str(exc), status=exc.status)


def _closed_response(request: HttpRequest, assignment: Assignment) -> Optional[HttpResponse]:
    """The page for an assignment that no longer takes answers, or None when it is open."""
    assignment.expire_if_overdue()
    if assignment.status == Assignment.Status.ACCEPTED:
        return None
    if assignment.status in (
        Assignment.Status.SUBMITTED,
        Assignment.Status.APPROVED,
        Assignment.Status.REJECTED,
    ):
        return _after_submit(request, assignment)
    if assignment.status == Assignment.Status.EXPIRED:
        return message_page(
            request,
            "Time is up",
            "The time limit of this HIT has passed and it went back to the "
            "pool. Your draft is kept if you accept it again.",
            status=410,
        )
    return message_page(
        request, "HIT returned", "You returned this HIT. Thank you for your time.", status=410
    )


@csrf_exempt
@platform_frameable
def assignment_page(request: HttpRequest, token: str) -> HttpResponse:
    """Show the task (with the autosaved draft) or take the submission (see the module's security note).

    A valid submission is stored in one transaction (the assignment, its QA pairs and everything they
    hold) before the worker is sent back to the platform; an invalid one re-renders every field as typed
    with a message next to each problem, and is kept as the draft.

    Security behavior: the signed link is the credential (see the module note); the admission rule
    (:func:`worker.admission.admit_link`) refuses blocked workers and assignments outside
    their batch's platform, and a closed assignment takes no answers. Work submitted in a session its
    platform does not vouch for yet (an MTurk ``assignmentId``, possibly made up) uses up nothing other
    sessions need: a SciQ stage-1 question takes its passage, and a rejection of all three counts on
    them, only once MTurk confirms the session (:meth:`HitHandler.confirmed`); until then the passage
    stays open to every other session (docs/admission.md).
    """
    assignment = _admitted(request, token, passages=True)
    if isinstance(assignment, HttpResponse):
        return assignment
    closed = _closed_response(request, assignment)
    if closed is not None:
        return closed
    batch = assignment.hit.batch
    if not assignment.has_consent:  # annotated by hit_links.assignment_for
        return render(
            request,
            "hits/consent.html",
            {
                "assignment": assignment,
                "batch": batch,
                "token": token,
                "tutorial": handler_for(batch.kind).tutorial(),
            },
            using=ENGINE,
        )
    handler = handler_for(batch.kind)
    if request.method != "POST":
        return _task_page(request, assignment.hit, handler, assignment)
    fields = handler.fields_from(request.POST)
    check = handler.checked(assignment.hit, assignment, fields)
    if not check.ok:
        assignment = _keep_as_draft(request, token, fields)
        return _task_page(request, assignment.hit, handler, assignment, check)
    try:
        with transaction.atomic():
            # The submit's conditional UPDATE is the row lock: a double submission or an expiry that
            # won the race stores nothing (the transaction rolls back), and the page says what happened
            # instead. The handler stores with the HIT, batch, corpus and worker the signed link's
            # read brought.
            handler.submit(assignment, check, active=_active_report(request))
            asks_model = loop_settings(batch) is not None
            options_only = handler.options_only_check and options_only_enabled()
            transaction.on_commit(lambda: _after_commit(assignment.pk, asks_model, options_only))
    except IllegalTransition:
        return _closed_response(request, assignment) or _after_submit(request, assignment)
    except HitConflict as exc:
        assignment = _keep_as_draft(request, token, fields)
        check.error("__all__", str(exc))
        return _task_page(request, assignment.hit, handler, assignment, check)
    logger.info("Worker(%s) submitted Assignment(%s)", assignment.worker_id, assignment.pk)
    return _after_submit(request, assignment)


def _keep_as_draft(request: HttpRequest, token: str, fields: dict[str, Any]) -> Assignment:
    """Merge a submission that was not stored into the draft, under the row lock as autosave does.

    The merge starts from the stored draft read under the lock, not from the copy read before the
    check, so an edit saved meanwhile from another tab with a newer revision is kept. Returns the
    assignment as stored, for the page that shows the problems.
    """
    with transaction.atomic():
        locked = hit_links.assignment_for(token, lock=True)
        if locked.status == Assignment.Status.ACCEPTED:
            locked.save_draft(fields, _revisions(request, fields))
    return locked


def _after_commit(assignment_id: int, asks_model: bool = False, options_only: bool = False) -> None:
    """Queue the work that follows a stored submission (QC, and the model checks of a batch that asks a
    model); failures never lose the submission.

    With batching (Redis) the follow-up is not queued here: the stored submission is the record of it,
    and a look that beat sends follows it up (:mod:`crowd.services.followups`), so a submit makes no
    broker or cache round trip and the web process does not load their clients for it.
    """
    from crowd.services import followups

    if not followups.batching():
        try:
            followups.queue_after_submission(assignment_id)
        except Exception:  # noqa: BLE001 - the broker being down must not turn a stored submission into an error
            logger.exception(
                "could not queue the follow-up of Assignment(%s); the follow-up sweep re-queues it",
                assignment_id,
            )
    if asks_model:
        try:
            from evaluation.services.model_checks import queue_submission_check

            queue_submission_check(assignment_id)
        except Exception:  # noqa: BLE001 - the model in the loop fails open: the sweep queues it again
            logger.exception(
                "could not queue the model checks of Assignment(%s); the model-loop sweep re-queues them",
                assignment_id,
            )
    if options_only:
        try:
            from evaluation.loop_tasks import gpu_options_only_check

            gpu_options_only_check.delay(assignment_id)
        except Exception:  # noqa: BLE001 - the artifact check fails open: the item stays unchecked
            logger.exception("could not queue the options-only check of Assignment(%s)", assignment_id)


def _after_submit(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """Send the worker back where they came from, once the answers are stored (the platform's step:
    the worker platform's :meth:`~crowd.providers.traits.PlatformTraits.completion`)."""
    traits = traits_for(assignment.worker.platform)
    # The batch's platform state is read only by a platform whose completion step needs its code.
    code = (
        BatchPlatformState.of(assignment.hit.batch_id).completion_code if traits.completion_uses_code else ""
    )
    finished = traits.finished(assignment.platform_meta, assignment.platform_ref, code)
    completion = completion_for(assignment.worker.platform, finished, config_from(settings))
    if completion is None:
        return message_page(request, "Thank you!", "Your answers are saved.", next_url="worker:home")
    if completion.post_to:
        return render(
            request,
            completion.page,
            {
                "action": completion.post_to,
                "assignment_id": completion.assignment_id,
                "submitted_at": assignment.submitted_at,
            },
            using=ENGINE,
        )
    if completion.redirect_to:
        return redirect(completion.redirect_to)
    return message_page(request, "Submitted", completion.problem)


def _revisions(request: HttpRequest, fields: dict[str, Any]) -> Optional[dict[str, int]]:
    """The page's per-field draft revisions (:mod:`annotation.drafts`), None from a page without script."""
    return parse_revisions(request.POST.get(REVISIONS_FIELD), set(fields))


@csrf_exempt
@require_POST
def save_draft(request: HttpRequest, token: str) -> JsonResponse:
    """Autosave: merge the form into the draft, keeping each field's newest edit (:mod:`annotation.drafts`).

    The page calls this shortly after typing stops and when it is hidden or left (``sendBeacon``), so
    saves may arrive out of order; the per-field revisions make the order irrelevant.

    Security behavior: the signed link is the credential and the admission rule must still admit the
    worker (:func:`worker.admission.admit_link`); only an accepted, unexpired assignment
    takes a draft.
    """
    with transaction.atomic():
        # The link's read takes the row lock, so out-of-order saves merge one after the other.
        assignment = hit_links.assignment_for(token, lock=True)
        try:
            admission.admit_link(assignment)
        except admission.Refused as exc:
            return JsonResponse({"saved": False, "error": str(exc)}, status=exc.status)
        if assignment.is_overdue or assignment.status != Assignment.Status.ACCEPTED:
            return JsonResponse({"saved": False, "status": assignment.status}, status=409)
        fields = handler_for(assignment.hit.batch.kind).fields_from(request.POST)
        assignment.save_draft(fields, _revisions(request, fields))
        _record_active(request, assignment)
    return JsonResponse({"saved": True, "saved_at": assignment.draft_saved_at.isoformat()})


def _active_report(request: HttpRequest) -> Optional[tuple[str, int]]:
    """The page's active-time report (``active_page``, ``active_ms``) if the POST carries a valid one."""
    return parse_report(request.POST.get(PAGE_FIELD), request.POST.get(MS_FIELD))


def _record_active(request: HttpRequest, assignment: Assignment) -> bool:
    """Merge the page's active-time report into ``assignment`` if the POST carries one."""
    report = _active_report(request)
    if report is None:
        return False
    assignment.record_active(*report)
    return True


@csrf_exempt
@require_POST
def report_active(request: HttpRequest, token: str) -> JsonResponse:
    """The page's running total of active time, sent when it is hidden or left (``sendBeacon``).

    Security behavior: the signed link is the credential and the admission rule must still admit the
    worker (:func:`worker.admission.admit_link`); only an accepted, unexpired assignment takes a report,
    a report is capped at the wall time since the assignment was accepted (so a forged total cannot
    raise the pay computed from it beyond what the clock allows), and a malformed one is refused (400).
    """
    with transaction.atomic():
        assignment = hit_links.assignment_for(token, lock=True)
        try:
            admission.admit_link(assignment)
        except admission.Refused as exc:
            return JsonResponse({"saved": False, "error": str(exc)}, status=exc.status)
        if assignment.is_overdue or assignment.status != Assignment.Status.ACCEPTED:
            return JsonResponse({"saved": False, "status": assignment.status}, status=409)
        if not _record_active(request, assignment):
            return JsonResponse(
                {"saved": False, "error": "active_page and active_ms are required"}, status=400
            )
    return JsonResponse({"saved": True, "active_seconds": assignment.active_seconds})


@csrf_exempt
@require_POST
def locate_span(request: HttpRequest, token: str) -> JsonResponse:
    """Locate a span the worker typed or pasted in the HIT's syllabus (the span field asks as it changes).

    Security behavior: only an open assignment's signed link that the admission rule still admits
    (:func:`worker.admission.admit_link`) may ask, about its own HIT's document
    (the document is never named by the request); a closed assignment gets 409, a HIT kind without a
    span locator or without a document 404. The text is cut to the handler's limit before it is
    searched, and the answer carries only offsets and the syllabus's own text, which the worker can
    already read.
    """
    assignment = hit_links.assignment_for(token)
    try:
        admission.admit_link(assignment)
    except admission.Refused as exc:
        return JsonResponse({"status": "refused", "error": str(exc)}, status=exc.status)
    handler = handler_for(assignment.hit.batch.kind)
    locate = getattr(handler, "locate_span", None)
    document = assignment.hit.document
    if locate is None or document is None:
        raise Http404("This HIT has no syllabus to locate spans in")
    if assignment.is_overdue or assignment.status != Assignment.Status.ACCEPTED:
        return JsonResponse({"status": assignment.status}, status=409)
    return JsonResponse(locate(document, str(request.POST.get("text", ""))))


@csrf_exempt
@require_POST
@platform_frameable
def return_hit(request: HttpRequest, token: str) -> HttpResponse:
    """The worker gives the HIT back (local crowd and Prolific; MTurk workers return it on MTurk).

    Security behavior: only the holder of the signed link can return it, and only while it is accepted.
    """
    assignment = _admitted(request, token)
    if isinstance(assignment, HttpResponse):
        return assignment
    try:
        assigning.return_assignment(assignment)
    except IllegalTransition:
        return message_page(
            request, "Nothing to return", "This HIT is no longer yours to return.", status=409
        )
    if not traits_for(assignment.worker.platform).external:
        batch = assignment.hit.batch
        messages.info(request, f"You returned the HIT “{batch.title or batch.name}”.")
        return redirect("worker:home")
    return message_page(request, "HIT returned", "You returned this HIT. Thank you for your time.")


@csrf_exempt
@require_POST
@platform_frameable
def give_consent(request: HttpRequest, token: str) -> HttpResponse:
    """Record the worker's consent for this batch, then show the task.

    Security behavior: only the holder of the signed link; the consent is for that assignment's worker
    and batch.
    """
    assignment = hit_links.assignment_for(token)
    if request.POST.get("consent") != "yes":
        return message_page(
            request,
            "No consent given",
            "You did not agree to take part, so the task is not shown. You can return the HIT.",
            status=400,
            token=token,
        )
    Consent.objects.get_or_create(worker=assignment.worker, batch=assignment.hit.batch)
    # The first view after consent opens the instructions and worked examples (hit.js reads ?tutorial=1).
    return redirect(hit_links.url_for(assignment) + "?tutorial=1")


def _document_of(token: str, pk: int) -> Document:
    """The document of the assignment (or, with a preview token, of the HIT) that ``token`` names."""
    if token.startswith("p"):
        document = hit_links.hit_for_preview(token).document
    else:
        document = hit_links.assignment_for(token).hit.document
    if document is None or document.pk != pk:
        raise Http404("No such document")
    return document


@require_GET
@platform_frameable
def document_page_image(request: HttpRequest, token: str, pk: int, page: int) -> FileResponse:
    """One PDF page of the HIT's syllabus as a PNG (rendered once, then cached on disk).

    Security behavior: an assignment or preview token names the HIT; only that HIT's own document is
    served, and a width that is not a number is a 404.
    """
    from config.storage import local_media_path
    from worker.pdf_render import render_page

    document = _document_of(token, pk)
    if not document.pdf:
        raise Http404(f"Document({pk}) has no PDF")
    try:
        width = int(request.GET.get("width", "900"))
        pdf = local_media_path(document.pdf)  # this host's copy when media live in the shared storage
        path = render_page(pdf, page, width, settings.MEDIA_ROOT / "page-images")
    except (ValueError, FileNotFoundError) as exc:
        raise Http404(str(exc)) from exc
    response = FileResponse(open(path, "rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response


@require_GET
@platform_frameable
def hit_preview(request: HttpRequest, pk: int) -> HttpResponse:
    """A researcher looks at a HIT exactly as a worker previews it (read-only).

    Security behavior: researchers only (404 otherwise); nothing can be saved from a preview.
    """
    if not can_view(request):
        raise Http404("No such HIT")
    hit = get_object_or_404(HIT.objects.select_related("batch", "document"), pk=pk)
    handler = handler_for(hit.batch.kind)
    return _task_page(request, hit, handler, None)
