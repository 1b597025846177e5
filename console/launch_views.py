"""The "New batch" page: choose what workers do, see the cost and hourly pay, then publish or keep a draft.

Security behavior: the page and its actions need the researcher ``launch`` permission
(:mod:`annotation.permissions`), with Django's CSRF protection. It creates batches only through
``crowd.services.launching`` (``dry_run`` for the estimate, ``create_draft`` for a draft, ``launch`` to
publish), the service the ``launch_batch`` command calls, so the budget cap and every check of the
command hold here too. Publishing needs an estimate shown first: the Publish button appears only on the
page that shows the estimate for exactly the values being published.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation.hits import BuiltFrom, handler_for
from annotation.permissions import researcher_action
from annotation.services.batches import BatchSpecError
from console.batch_form import NewBatchForm
from crowd.providers.costs import effective_hourly_pay_cents, format_money

MINIMUM_WAGE_CENTS = 725
"""US federal minimum wage per hour: the estimate warns below it (SyllabusQA paid above it)."""


@researcher_action("launch")
def new_batch(request: HttpRequest) -> HttpResponse:
    """GET: the empty form. POST ``action`` = estimate | draft | publish (see the module's note)."""
    if request.method != "POST":
        return render(request, "annotation/batch_new.html", {"form": NewBatchForm()})
    form = NewBatchForm(request.POST)
    action = request.POST.get("action", "estimate")
    context: dict[str, Any] = {"form": form, "fingerprint": fingerprint(request.POST)}
    if action == "publish" and request.POST.get("estimated") != context["fingerprint"]:
        action = "estimate"
        context["changed"] = True
    if form.is_valid():
        try:
            if handler_for(form.cleaned_data["kind"]).built_from == BuiltFrom.RELEASE:
                return _expert_batch(request, form, action, context)
            return _batch(request, form, action, context)
        except BatchSpecError as exc:
            form.add_error(getattr(exc, "field", None), str(exc))
    return render(request, "annotation/batch_new.html", context, status=200 if form.is_valid() else 400)


def fingerprint(data: Any) -> str:
    """A digest of the typed values (not the button pressed): publishing needs the estimate of these."""
    skip = {"csrfmiddlewaretoken", "action", "estimated"}
    items = sorted((key, value) for key in data if key not in skip for value in data.getlist(key))
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()


def _batch(request: HttpRequest, form: NewBatchForm, action: str, context: dict[str, Any]) -> HttpResponse:
    from crowd.services.launching import (
        QualificationChoiceError,
        create_draft,
        dry_run,
        launch,
        qualification_options,
    )
    from crowd.services.lifecycle import LifecycleError

    data = form.cleaned_data
    try:
        options = qualification_options(
            data["provider"],
            data["require_qualification"].pk if data.get("require_qualification") else None,
            [b.pk for b in data.get("exclude_batches") or []],
        )
    except QualificationChoiceError as exc:
        form.add_error("exclude_batches" if exc.field == "exclude_batch" else exc.field, str(exc))
        return render(request, "annotation/batch_new.html", context, status=400)
    spec = form.spec(options)
    try:
        if action == "publish":
            batch, estimate = launch(spec, created_by=request.user)
            messages.success(
                request,
                f"{batch.name} is published on {batch.get_provider_display()} with {batch.hits.count()} HITs "
                f"(estimated cost {format_money(estimate.total_cents, batch.currency)}).",
            )
            return redirect("annotation:batch", pk=batch.pk)
        if action == "draft":
            batch, estimate = create_draft(spec, created_by=request.user)
            messages.success(
                request,
                f"{batch.name} is saved as a draft with {batch.hits.count()} HITs "
                f"(estimated cost {format_money(estimate.total_cents, batch.currency)}): "
                "publish it from this page.",
            )
            return redirect("annotation:batch", pk=batch.pk)
        hits, estimate, estimate_currency = dry_run(spec)
    except LifecycleError as exc:
        form.add_error("budget" if "budget" in str(exc) else None, str(exc))
        return render(request, "annotation/batch_new.html", context, status=400)
    minutes_limit = data["time_limit"]
    minutes_expected = data.get("expected_minutes") or minutes_limit
    reward = spec.reward_cents
    context["estimate"] = {
        "hits": hits,
        "currency": estimate_currency,
        "assignments": estimate.assignments,
        "rewards": estimate.rewards_cents / 100,
        "bonuses": estimate.bonuses_cents / 100,
        "fees": estimate.fees_cents / 100,
        "total": estimate.total_cents / 100,
        "budget": None if spec.budget_cap_cents is None else spec.budget_cap_cents / 100,
        "minutes_expected": minutes_expected,
        "minutes_limit": minutes_limit,
        "hourly_expected": effective_hourly_pay_cents(reward, minutes_expected * 60) / 100,
        "hourly_limit": effective_hourly_pay_cents(reward, minutes_limit * 60) / 100,
        "below_minimum": effective_hourly_pay_cents(reward, minutes_expected * 60) < MINIMUM_WAGE_CENTS,
    }
    return render(request, "annotation/batch_new.html", context)


def _expert_batch(
    request: HttpRequest, form: NewBatchForm, action: str, context: dict[str, Any]
) -> HttpResponse:
    """Expert batches sample a release split and open on the local crowd at once (nothing to pay)."""
    from evaluation.services.expert import create_expert_batch

    data = form.cleaned_data
    if action != "publish":
        context["expert_note"] = True
        return render(request, "annotation/batch_new.html", context)
    batch = create_expert_batch(
        data["release"],
        data["sample"],
        split=data.get("split") or "test",
        name=data.get("name") or "",
        time_limit_minutes=data["time_limit"],
        created_by=request.user,
    )
    messages.success(request, f"{batch.name} is open on the local crowd with {batch.hits.count()} HITs.")
    return redirect("annotation:batch", pk=batch.pk)
