"""Bulk bonuses of a batch from a CSV: upload, preview every row, then pay (``crowd.services.bulk_bonus``)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from annotation.models import Batch
from annotation.permissions import researcher_action
from crowd.providers.costs import format_money
from crowd.services.bulk_bonus import (
    MAX_AMOUNT,
    MAX_BYTES,
    MAX_ROWS,
    BonusPlan,
    BulkBonusError,
    decode,
    digest_of,
    pay_plan,
    read_plan,
)

TEMPLATE = "annotation/batch_bonuses.html"


def _text(request: HttpRequest) -> str:
    """The CSV of a POST: an uploaded file, else the text box (which keeps it between steps)."""
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size is not None and upload.size > MAX_BYTES:
            raise BulkBonusError(f"The file is {upload.size:,} bytes; at most {MAX_BYTES:,} are read.")
        return decode(upload.read(MAX_BYTES + 1))
    return decode(request.POST.get("csv", "").encode("utf-8", "surrogatepass"))


@researcher_action("pay")
def batch_bonuses(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the upload form. POST ``action`` = preview (check every row and show what would be paid) or
    pay (pay the previewed rows through the ledger and show what each row did).

    Security behavior: every request needs the ``pay`` permission (a worker's session, an anonymous
    visitor or a researcher without it gets the refusal page), and a POST needs Django's CSRF token.
    Rows resolve only to submitted or approved work of this batch (an assignment id of another batch, or
    a pseudonym with no work here, is a row error); amounts are positive, at most two decimals and at
    most ``MAX_AMOUNT``; the file is size- and row-limited and must be UTF-8. Nothing is paid from a file
    with one bad row. Paying needs the preview's digest of exactly the text being paid, so a changed file
    is previewed again. Each row is paid by ``crowd.services.review.bonus`` under the single-bonus
    ledger key (submission + reason): a double submit, a replayed request or the same file uploaded
    again pays nothing more, and the batch's budget cap is checked before each bonus, fees included.
    """
    batch = get_object_or_404(Batch, pk=pk)
    context: dict[str, Any] = {
        "batch": batch,
        "limits": {"bytes": MAX_BYTES, "rows": MAX_ROWS, "amount": MAX_AMOUNT},
    }
    if request.method != "POST":
        return render(request, TEMPLATE, context)
    text = request.POST.get("csv", "")
    try:
        text = _text(request)
        context["csv"] = text
        plan = read_plan(batch, text)
    except BulkBonusError as exc:
        context.update(csv=context.get("csv", text), error=str(exc))
        return render(request, TEMPLATE, context, status=400)
    context["plan"] = plan
    if plan.problems:
        return render(request, TEMPLATE, context, status=400)
    if request.POST.get("action") == "pay":
        if request.POST.get("digest") != digest_of(text):
            context["changed"] = True
            return render(request, TEMPLATE, context, status=400)
        return _pay(request, batch, plan, context)
    context["budget_note"] = plan.budget_note()
    return render(request, TEMPLATE, context)


def _pay(request: HttpRequest, batch: Batch, plan: BonusPlan, context: dict[str, Any]) -> HttpResponse:
    results = pay_plan(plan.rows)
    paid = [r for r in results if r.outcome != "refused"]
    refused = len(results) - len(paid)
    total = format_money(sum(r.row.amount_cents for r in paid), batch.currency)
    text = f"{len(paid)} bonus{'es' if len(paid) != 1 else ''} sent or already paid ({total})"
    if refused:
        messages.error(request, f"{text}; {refused} refused: see each row.")
    else:
        messages.success(request, f"{text}.")
    context.update(results=results, plan=None, csv="")
    return render(request, TEMPLATE, context)


@require_POST
@researcher_action("pay")
def batch_bonus_top(request: HttpRequest, pk: int) -> HttpResponse:
    """Plan a bonus for the ``top`` best workers of the batch by ``measure`` (skill or gold accuracy):
    the bulk-bonus preview of that plan, with who was left out and why; paying is the preview's own
    button (:func:`batch_bonuses`), so nothing is paid from here.

    Security behavior: POST with CSRF and the ``pay`` permission only (anyone else gets the refusal
    page). The ranking is computed from the stored validations and gold answers, never taken from the
    request; the plan is the same checked CSV the upload path reads (this batch's payable work only,
    amounts positive and at most ``MAX_AMOUNT``), and paying it needs its digest, the ledger key per
    submission and reason, and the budget check, exactly as an uploaded file does. Bad numbers are a
    message on the page, never an error page.
    """
    from crowd.services.reliability import MEASURES, top_bonus_csv

    batch = get_object_or_404(Batch, pk=pk)
    post = request.POST
    context: dict[str, Any] = {
        "batch": batch,
        "limits": {"bytes": MAX_BYTES, "rows": MAX_ROWS, "amount": MAX_AMOUNT},
    }
    measure = post.get("measure", "skill")
    try:
        top = int(post.get("top", ""))
        min_n = max(1, int(post.get("min_labels", "1") or "1"))
        amount = Decimal(post.get("amount", "").strip())
        if not amount.is_finite():
            raise ValueError("the amount must be a number such as 0.50")
        text, skipped = top_bonus_csv(batch, measure, top, amount, post.get("reason", "").strip(), min_n)
    except (ValueError, InvalidOperation, OverflowError) as exc:
        context["error"] = f"No plan was made: {exc}" if str(exc) else "No plan was made: check the numbers."
        return render(request, TEMPLATE, context, status=400)
    plan = read_plan(batch, text)
    context.update(
        csv=text,
        plan=plan,
        top={"n": top, "measure": MEASURES.get(measure, measure), "skipped": skipped},
        budget_note=plan.budget_note(),
    )
    return render(request, TEMPLATE, context, status=400 if plan.problems else 200)
