"""The local crowd's pages: sign in (password or one-time invite), see available work, take the next HIT.

Security behavior: every page but the invite and login pages requires a logged-in user who has a
local worker account; researchers who are not workers are sent to the researcher pages. Taking a HIT
is a POST with CSRF protection (these pages are first-party, unlike the HIT pages in MTurk's iframe).
An invite link is consumed only by the POST of its "Start" button, so link previews in mail or chat
clients cannot use it up.
"""

from __future__ import annotations

import functools
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Assignment, Batch
from annotation.permissions import can
from annotation.sql_reads import SqlRead, column, together
from crowd.invites import InviteError, find_invite, redeem
from crowd.models import Worker
from crowd.providers.traits import hosted_platforms
from worker import admission, assigning, hit_links
from worker.task_templates import message_page


def _worker_or_none(request: HttpRequest) -> Worker | None:
    return getattr(request.user, "worker", None) if request.user.is_authenticated else None


class WorkerAuthenticationForm(AuthenticationForm):
    """The sign-in form of local workers: only accounts that are a worker and nothing more.

    A researcher, staff or superuser account is refused here even with the right password (it signs in
    on the researchers' page), so a worker page never opens a researcher session.
    """

    def confirm_login_allowed(self, user: Any) -> None:
        super().confirm_login_allowed(user)
        is_worker = Worker.objects.filter(user=user).exists()
        if not is_worker or user.is_staff or user.is_superuser or can(user, "view"):
            raise ValidationError(
                self.error_messages["invalid_login"],
                code="invalid_login",
                params={"username": self.username_field.verbose_name},
            )


class WorkerLoginView(LoginView):
    """Password sign-in for local workers.

    Security behavior: only worker accounts sign in here (:class:`WorkerAuthenticationForm`); failed
    attempts are throttled and locked out per account and per client by django-axes, as on the
    researchers' sign-in page (``AXES_*`` in the settings).
    """

    template_name = "worker/login.html"
    redirect_authenticated_user = True
    next_page = "worker:home"
    authentication_form = WorkerAuthenticationForm


@login_required(login_url="worker:login")
def home(request: HttpRequest) -> HttpResponse:
    """Available batches with the number of HITs left for this worker, their open and recent work, and the
    researchers' messages to them (shown messages count as read).

    Security behavior: only the signed-in worker's own messages are read; the text is escaped.
    """
    from crowd.services.messaging import inbox

    worker = _worker_or_none(request)
    if worker is None:
        return message_page(
            request,
            "No worker account",
            "You are signed in without a worker account. Open an invite link to work on HITs.",
            status=403,
        )
    in_progress = [
        (a, hit_links.url_for(a))
        for a in Assignment.objects.filter(worker=worker, status=Assignment.Status.ACCEPTED)
        .select_related("hit__batch")
        .order_by("accepted_at")
        if not a.is_overdue
    ]
    recent = (
        Assignment.objects.filter(worker=worker)
        .exclude(status=Assignment.Status.ACCEPTED)
        .select_related("hit__batch")
        .order_by("-accepted_at")[:20]
    )
    context: dict[str, Any] = {
        "worker": worker,
        "available": assigning.available_batches_for(worker),
        "in_progress": in_progress,
        "recent": recent,
        "inbox": inbox(worker),
    }
    return render(request, "worker/home.html", context)


_WORKER_OF_USER = SqlRead(Worker, where=f"{{self}}.{column(Worker, 'user')} = %s")
"""``request.user.worker``: the signed-in user's worker account, if any."""


@functools.cache
def _hosted_batch_read(platforms: int) -> SqlRead[Batch]:
    """``Batch.objects.filter(pk=..., provider__in=hosted_platforms())`` (``platforms`` of them)."""
    where = (
        f'{{self}}."id" = %s AND {{self}}.{column(Batch, "provider")} IN ({", ".join(["%s"] * platforms)})'
    )
    return SqlRead(Batch, where=where)


@require_POST
@login_required(login_url="worker:login")
def next_hit(request: HttpRequest, batch_id: int) -> HttpResponse:
    """Take the next HIT of a batch (or resume the one in progress) and open it.

    The worker account and the batch are read together, in one round trip, with statements written once
    (:mod:`annotation.sql_reads`): every HIT a local worker takes starts here.

    Security behavior: the admission rule (:func:`worker.admission.admit_local`) admits
    only local workers invited to this batch (expert batches: expert invites), then checks slots, caps,
    qualifications and own-question exclusion under the HIT's row lock.
    """
    try:  # a number no batch key can be (the URL takes any digits) is not sent to the database
        Batch._meta.pk.run_validators(batch_id)
    except ValidationError:
        raise Http404("No such batch.") from None
    hosted = hosted_platforms()
    workers, batches = together(
        (_WORKER_OF_USER, (request.user.pk,)), (_hosted_batch_read(len(hosted)), (batch_id, *hosted))
    )
    if not workers:
        return redirect("worker:home")
    if not batches:
        raise Http404("No such batch.")
    worker, batch = workers[0], batches[0]
    try:
        assignment = admission.admit_local(batch, worker)
    except admission.Refused as exc:
        messages.info(request, str(exc))
        return redirect("worker:home")
    return redirect(hit_links.url_for(assignment))


def invite(request: HttpRequest, token: str) -> HttpResponse:
    """Show an invite (GET) and, on "Start" (POST), create the worker, sign them in and start.

    Security behavior: the one-time token is the credential (only its hash is stored, a POST consumes
    it); the first HIT goes through the admission rule like every other path.
    """
    try:
        found = find_invite(token)
    except InviteError as exc:
        return message_page(request, "Invite link", str(exc), status=410)
    if request.method != "POST":
        return render(request, "worker/invite.html", {"invite": found})
    try:
        worker = redeem(token)
    except InviteError as exc:
        return message_page(request, "Invite link", str(exc), status=410)
    login(request, worker.user, backend="django.contrib.auth.backends.ModelBackend")
    if found.batch_id:
        try:
            assignment = admission.admit_local(found.batch, worker)
            return redirect(hit_links.url_for(assignment))
        except admission.Refused as exc:
            messages.info(request, str(exc))
    return redirect("worker:home")
