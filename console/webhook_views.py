"""The Webhooks pages: register endpoints, read each one's delivery log, replay a delivery, send a test.

Security behavior: reading needs the researcher ``view`` permission; every change (add, edit, disable,
rotate the secret, replay, test) needs ``manage`` and Django's CSRF token. An endpoint's secret is shown
only on its own page, to accounts that may manage endpoints. URLs pointing at this server's private
addresses are refused unless ``WEBHOOK_ALLOW_PRIVATE`` is on (also checked again before every attempt).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotation.permissions import can, refuse, researcher_action
from webhooks.events import queue_deliveries, send_ping
from webhooks.forms import EndpointForm
from webhooks.models import Delivery, Endpoint

LOG_PAGE_SIZE = 50


@researcher_action("view")
def endpoint_list(request: HttpRequest) -> HttpResponse:
    """Every endpoint with its latest outcome, and the form to register a new one (``manage``)."""
    form = EndpointForm(initial={"active": True})
    if request.method == "POST":
        if not can(request.user, "manage"):
            return render(request, "annotation/webhooks.html", _list_context(form), status=403)
        form = EndpointForm(request.POST)
        if form.is_valid():
            endpoint = form.save(commit=False)
            endpoint.created_by = request.user
            endpoint.save()
            messages.success(request, f"Endpoint {endpoint.url} registered; its signing secret is below.")
            return redirect("annotation:webhook", pk=endpoint.pk)
    return render(request, "annotation/webhooks.html", _list_context(form))


def _list_context(form: EndpointForm) -> dict[str, Any]:
    endpoints = list(Endpoint.objects.all())
    for endpoint in endpoints:
        endpoint.last = endpoint.deliveries.select_related("event").first()
        endpoint.failed = endpoint.deliveries.filter(status=Delivery.Status.FAILED).count()
    return {"endpoints": endpoints, "form": form}


@researcher_action("view")
def endpoint_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One endpoint: its settings (editable with ``manage``: a change by anyone else is refused), its
    secret and its delivery log."""
    if request.method == "POST" and not can(request.user, "manage"):
        return refuse(request, "manage")
    endpoint = get_object_or_404(Endpoint, pk=pk)
    form = EndpointForm(instance=endpoint)
    if request.method == "POST":
        form = EndpointForm(request.POST, instance=endpoint)
        if form.is_valid():
            form.save()
            messages.success(request, "Endpoint saved.")
            return redirect("annotation:webhook", pk=pk)
    status = request.GET.get("status", "")
    deliveries = endpoint.deliveries.select_related("event").prefetch_related("attempt_log")
    if status in Delivery.Status.values:
        deliveries = deliveries.filter(status=status)
    page = Paginator(deliveries, LOG_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "endpoint": endpoint,
        "form": form,
        "page": page,
        "status": status,
        "statuses": Delivery.Status.choices,
        "show_secret": can(request.user, "manage"),
    }
    return render(request, "annotation/webhook.html", context)


@require_POST
@researcher_action("manage")
def endpoint_action(request: HttpRequest, pk: int) -> HttpResponse:
    """``action`` = ping (send a test event) | rotate (a new secret) | delete."""
    endpoint = get_object_or_404(Endpoint, pk=pk)
    action = request.POST.get("action", "")
    if action == "ping":
        send_ping(endpoint)
        messages.success(request, "A ping event was queued; its delivery shows in the log below.")
    elif action == "rotate":
        endpoint.rotate_secret()
        messages.success(request, rotation_message(endpoint))
    elif action == "delete":
        endpoint.delete()
        messages.success(request, f"Endpoint {endpoint.url} and its delivery log were deleted.")
        return redirect("annotation:webhooks")
    else:
        messages.error(request, "Unknown action.")
    return redirect("annotation:webhook", pk=pk)


def rotation_message(endpoint: Endpoint) -> str:
    """What a rotation did, for the console and the API."""
    if endpoint.previous_secret_expires is None:
        return "The secret was replaced: deliveries from now on are signed with the new one only."
    until = timezone.localtime(endpoint.previous_secret_expires).strftime("%Y-%m-%d %H:%M %Z")
    return (
        "The secret was replaced. Until "
        f"{until} each delivery is signed with both the new and the old secret (two v1 signatures), "
        "so update your receiver before then."
    )


@require_POST
@researcher_action("manage")
def delivery_replay(request: HttpRequest, pk: int) -> HttpResponse:
    """Send a delivery again (same event id, fresh attempts), whatever its status."""
    delivery = get_object_or_404(Delivery, pk=pk)
    delivery.replay()
    queue_deliveries([delivery.pk])
    messages.success(request, f"Delivery {delivery.pk} ({delivery.event.type}) was queued again.")
    return redirect("annotation:webhook", pk=delivery.endpoint_id)
