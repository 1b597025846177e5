"""Researcher pages that act on a batch: look at a submission, approve or reject it, publish, invite.

Security behavior: reading needs the researcher ``view`` permission (or the demo's read-only public
dashboard); every action (POST) needs its own permission from :mod:`annotation.permissions` (review,
manage, invite, pay, block) even then, with Django's CSRF protection; templates show a button only
when its permission is held. Approving and rejecting go through ``crowd.services.review``,
which tells the crowd platform and records payments, so the same rules hold as for ``review_batch``.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from django.views.generic import DetailView, TemplateView

from annotation.hits import handler_for
from annotation.models import Assignment, Batch, IllegalTransition, ModelCheck, ScreeningGrade
from annotation.permissions import ResearcherRequiredMixin, researcher_action
from crowd.invites import create_invites
from crowd.providers.costs import format_money
from crowd.providers.traits import accepted_rejection_categories, traits_for

QUEUE_PAGE_SIZE = 20
"""Submissions per page of the review queue (each one folded: its pairs open on demand)."""

REASON_KEY = "crowdqa-reject-reason-{pk}"
"""Session key of a typed rejection reason kept after a refused rejection (shown again in the form)."""


_PLAIN = (
    (re.compile(r"^Assignment\(\d+\) (?:approve|reject) on (\w+): "), r"\1 refused it: "),
    (re.compile(r"^Assignment\(\d+\) bonus \S+: "), ""),
    (re.compile(r"^Assignment\(\d+\):? (?=is )"), "it "),
    (re.compile(r"^Assignment\(\d+\): "), ""),
    (re.compile(r"\bAssignment\((\d+)\)"), r"submission \1"),
)


def plain(text: str) -> str:
    """A service error in plain words: no ``Assignment(3):`` prefixes (the message names the submission)."""
    for pattern, replacement in _PLAIN:
        text = pattern.sub(replacement, text)
    return text


def _error_text(exc: Exception) -> str:
    text = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
    return plain(text)


def _back_to(request: HttpRequest, default: str) -> HttpResponse:
    """Redirect to the form's ``next`` when it is a path or URL on this site, else to the view ``default``.

    ``next`` is only ever used as a URL (never as a view name to reverse), so any other text, or a URL
    with control characters (a header cannot hold them), goes to ``default`` instead of failing.
    """
    target = request.POST.get("next", "")
    printable = target.isprintable() and " " not in target
    if (
        printable
        and target.startswith(("/", "http://", "https://"))
        and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return HttpResponseRedirect(target)
    return redirect(default)


class AssignmentDetailView(ResearcherRequiredMixin, DetailView):
    """One submission: its QA pairs with spans (offsets and pages) and steps, or its validation."""

    model = Assignment
    template_name = "annotation/assignment.html"

    def get_queryset(self) -> Any:
        return Assignment.objects.select_related("hit__batch", "hit__document", "hit__qa_pair", "worker")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        assignment: Assignment = self.object
        pairs = list(assignment.qa_pairs.prefetch_related("spans", "steps").select_related("passage"))
        checks = {c.qa_pair_id: c for c in ModelCheck.objects.filter(qa_pair__in=[p.pk for p in pairs])}
        for pair in pairs:  # the model in the loop's verdict, for the Evidence column (None: no check)
            pair.loop_check = checks.get(pair.pk)
        context["pairs"] = pairs
        context["validation"] = getattr(assignment, "validation", None)
        if context["validation"] is not None:
            context["distractors"] = context["validation"].distractors.order_by("origin", "position")
        context["passages"] = assignment.hit.passages.all()
        spans = [s for pair in context["pairs"] for s in pair.spans.all()]
        context["spans"] = spans
        context["span_pages"] = sorted({s.page for s in spans if s.page})
        # Advisory quiz grade of a screening submission (None before grading or without a quiz).
        context["screening_grade"] = ScreeningGrade.objects.filter(assignment=assignment).first()
        # A syllabus QA batch's known-answer questions: the same grade, counted as gold answers.
        context["quiz_is_gold"] = handler_for(assignment.hit.batch.kind).gold_quiz
        context["kept_reason"] = self.request.session.pop(REASON_KEY.format(pk=assignment.pk), "")
        context["platform_traits"] = traits_for(assignment.hit.batch.provider)
        return context


@require_POST
@researcher_action("review")
def review_assignment(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject one submission (``action`` = approve | reject, ``reason`` for a rejection).

    A refused rejection keeps the typed reason: it is shown again in the form.

    Security behavior: needs the ``review`` permission and CSRF; approval pays through
    ``crowd.services.review`` (one payment per assignment, only for submitted work, only when the
    platform's record vouches for it: MTurk must know the assignment id, for the same worker and HIT;
    the check that confirms a session also applies what waited for it, once: its gold answers count, and
    a SciQ question takes its passage, flagged ``passage_reused`` when confirmed work already holds it).
    The decision is written locally before the platform is told; a reason that cannot be stored is
    refused before any platform call.
    """
    from crowd.services.review import ReviewError, approve_assignment, reject_assignment

    assignment = get_object_or_404(Assignment, pk=pk)
    action = request.POST.get("action")
    reason = request.POST.get("reason", "")
    try:
        if action == "approve":
            approve_assignment(assignment, confirm_no_work=request.POST.get("confirm_no_work") == "on")
            messages.success(request, f"Approved submission {pk}; {outcome(assignment)}.")
        elif action == "reject":
            category = request.POST.get("category", "OTHER")
            reject_assignment(
                assignment, reason, category if category in accepted_rejection_categories() else "OTHER"
            )
            messages.success(request, f"Rejected submission {pk}; {outcome(assignment)}.")
        else:
            messages.error(request, "Choose Approve or Reject.")
    except (IllegalTransition, ValidationError, ReviewError) as exc:
        messages.error(request, f"Submission {pk} was not changed: {_error_text(exc)}")
        if action == "reject" and reason:
            request.session[REASON_KEY.format(pk=pk)] = reason[:10_000]
        if request.POST.get("back"):  # the review stream: stay on this item to fix the reason
            return _back_to_field(request, "back", pk)
    if request.POST.get("next"):
        return _back_to(request, "annotation:review-stream")
    return redirect("annotation:assignment", pk=pk)


def _back_to_field(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Redirect to the same-site URL in POST field ``name``, else to the assignment page."""
    target = request.POST.get(name, "")
    if target.startswith("/") and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return HttpResponseRedirect(target)
    return redirect("annotation:assignment", pk=pk)


def outcome(assignment: Assignment) -> str:
    """The platform's answer to the decision just taken on ``assignment``, in plain words."""
    from crowd.models import Payment

    batch = assignment.hit.batch
    if not traits_for(batch.provider).external:
        told = "recorded for the local worker"
    else:
        told = f"{batch.get_provider_display()} accepted it"
    reward = Payment.objects.filter(assignment=assignment, kind=Payment.Kind.REWARD).first()
    if batch.reward_cents == 0 and (reward is None or reward.amount_cents == 0):
        told += "; this batch pays no reward"
    elif reward is not None:
        amount = format_money(reward.amount_cents, reward.currency)
        told += f"; reward {amount}: {reward.get_status_display().lower()}"
    return told


@require_POST
@researcher_action("invite")
def batch_invites(request: HttpRequest, pk: int) -> HttpResponse:
    """Create one-time invite links for local-crowd workers and show them (once).

    Security behavior: needs the ``invite`` permission and CSRF; each link is tied to this batch (the
    admission rule admits its worker to this batch and its stage-2 batches only) and only its hash is kept.
    """
    batch = get_object_or_404(Batch, pk=pk)
    try:
        count = int(request.POST.get("count", "1"))
        issued = create_invites(
            count,
            batch=batch,
            label=request.POST.get("label", "")[:200],
            is_expert=request.POST.get("is_expert") == "on",
            created_by=request.user,
            base_url=request.build_absolute_uri("/"),
        )
    except ValueError as exc:
        messages.error(request, f"No links were created: {exc}")
        return redirect("annotation:batch", pk=pk)
    return render(request, "annotation/invites.html", {"batch": batch, "issued": issued})


@require_POST
@researcher_action("manage")
def batch_status(request: HttpRequest, pk: int) -> HttpResponse:
    """Publish, pause, resume or cancel a batch (through its provider).

    Security behavior: needs the ``manage`` permission and CSRF; a paused batch admits no new claims.
    """
    from crowd.services.batch_status import change_status
    from crowd.services.lifecycle import LifecycleError

    batch = get_object_or_404(Batch, pk=pk)
    try:
        change_status(batch, request.POST.get("action", ""))
        messages.success(request, f"{batch.name} is now {batch.get_status_display().lower()}.")
    except (IllegalTransition, LifecycleError) as exc:
        messages.error(request, f"{batch.name} was not changed: {exc}")
    return redirect("annotation:batch", pk=pk)


@require_POST
@researcher_action("pay")
def bonus_assignment(request: HttpRequest, pk: int) -> HttpResponse:
    """Pay a bonus for one submission (once per reason: a double click or a retry pays nothing more).

    Security behavior: needs the ``pay`` permission and CSRF; the payment ledger's idempotency key makes a
    repeated request pay nothing more, and only work on file can be paid.
    """
    from crowd.services.review import ReviewError, bonus

    assignment = get_object_or_404(Assignment, pk=pk)
    try:
        cents = int(request.POST.get("cents", ""))
        result = bonus(
            assignment,
            cents,
            request.POST.get("reason", ""),
            confirm_no_work=request.POST.get("confirm_no_work") == "on",
        )
        amount = format_money(cents, assignment.hit.batch.currency)
        messages.success(
            request, f"Bonus of {amount} for submission {pk}: {result.status.value.replace('_', ' ')}."
        )
    except ValueError:
        currency = assignment.hit.batch.currency
        messages.error(
            request,
            f"The bonus must be a whole number of hundredths of {currency}, such as 50 for "
            f"{format_money(50, currency)}.",
        )
    except ReviewError as exc:
        messages.error(request, f"No bonus was paid for submission {pk}: {_error_text(exc)}")
    if request.POST.get("next"):
        return _back_to(request, "annotation:review-stream")
    return redirect("annotation:assignment", pk=pk)


@require_POST
@researcher_action("block")
def worker_block(request: HttpRequest, pk: int) -> HttpResponse:
    """Block or unblock a worker on their platform and locally (``action`` = block | unblock).

    Security behavior: needs the ``block`` permission and CSRF; a blocked worker is refused by the
    admission rule on every path (arrival, claim, task page, autosave, submit).
    """
    from crowd.models import Worker
    from crowd.services.review import ReviewError, block_worker, unblock_worker

    worker = get_object_or_404(Worker, pk=pk)
    try:
        if request.POST.get("action") == "unblock":
            unblock_worker(worker, request.POST.get("reason", ""))
            messages.success(request, f"Worker {worker.pseudonym} unblocked.")
        else:
            reason = request.POST.get("reason", "").strip()
            if not reason:
                raise ReviewError("A block needs a reason (it is kept with the worker).")
            block_worker(worker, reason)
            messages.success(request, f"Worker {worker.pseudonym} blocked.")
    except ReviewError as exc:
        messages.error(request, f"Worker {worker.pseudonym} was not changed: {_error_text(exc)}")
    return _back_to(request, "annotation:home")


class ReviewQueueView(ResearcherRequiredMixin, TemplateView):
    """Submissions of every kind filtered by flag, batch, worker and type, with bulk approve / reject."""

    template_name = "annotation/review_queue.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        from annotation.models import Validation
        from annotation.qc.common import SEVERITY
        from annotation.question_types import ALL_TYPES
        from console.review_queue import MAX_ROWS, VALIDATION, QueueFilter, queue

        context = super().get_context_data(**kwargs)
        flt = QueueFilter.from_params(self.request.GET)
        items = queue(flt)
        page = Paginator(items, QUEUE_PAGE_SIZE).get_page(self.request.GET.get("page"))
        shown = list(page.object_list)
        by_assignment = {item.assignment.pk: item for item in shown}
        hit_sizes = dict(
            Assignment.objects.filter(hit__in={item.assignment.hit_id for item in shown})
            .exclude(submitted_at__isnull=True)
            .order_by()
            .values_list("hit")
            .annotate(n=Count("pk"))
        )
        for item in shown:
            item.workers_on_hit = hit_sizes.get(item.assignment.hit_id, 1)  # type: ignore[attr-defined]
        params = self.request.GET.copy()
        params.pop("page", None)
        for grade in ScreeningGrade.objects.filter(assignment__in=list(by_assignment)):
            by_assignment[grade.assignment_id].quiz = grade  # type: ignore[attr-defined]
        context.update(
            filter=flt,
            items=shown,
            n_items=len(items),
            page_obj=page,
            page_query=params.urlencode(),
            n_pairs=sum(len(item.pairs) for item in items),
            n_validations=sum(1 for item in items if item.validation is not None),
            truncated=len(items) >= MAX_ROWS,
            batches=Batch.objects.order_by("-created")[:100],
            flags=sorted(SEVERITY),
            validation_flags=Validation.Flag.choices,
            types=[*ALL_TYPES, VALIDATION],
            statuses=Assignment.Status.choices,
        )
        return context


@require_POST
@researcher_action("review")
def review_queue_decide(request: HttpRequest) -> HttpResponse:
    """Approve or reject the ticked assignments (each goes to its platform; every one left out is listed
    with why: refused by its state or platform, or no longer there).

    Security behavior: needs the ``review`` permission and CSRF; ids that are not ASCII digits are
    ignored; each decision goes through ``crowd.services.review`` (payments recorded once).
    """
    from crowd.services.review import ReviewError, approve_assignment, reject_assignment

    action = request.POST.get("action")
    reason = request.POST.get("reason", "")
    ids = [int(i) for i in request.POST.getlist("assignment") if i.isdecimal() and i.isascii()]
    done, failed, decided = 0, [], []
    found = list(Assignment.objects.filter(pk__in=ids).select_related("hit__batch"))
    missing = sorted(set(ids) - {a.pk for a in found})
    if missing:
        failed.append(f"Skipped {len(missing)} ticked submission(s) that no longer exist: {missing[:20]}.")
    for assignment in found:
        try:
            if action == "approve":
                approve_assignment(assignment)
            elif action == "reject":
                reject_assignment(assignment, reason)
            else:
                raise ReviewError("choose Approve or Reject")
            done += 1
            decided.append(assignment)
        except (IllegalTransition, ValidationError, ReviewError) as exc:
            failed.append(f"Submission {assignment.pk} was not changed: {_error_text(exc)}")
    if done:
        verb = "Approved" if action == "approve" else "Rejected"
        told = "; ".join(f"{a.pk}: {outcome(a)}" for a in decided[:20])
        messages.success(request, f"{verb} {done} submission{'s' if done != 1 else ''} ({told}).")
    for line in failed:
        messages.error(request, line)
    return _back_to(request, "annotation:review-queue")


@require_POST
def batch_by_skill(request: HttpRequest, pk: int) -> HttpResponse:
    """Act on a batch's workers by how reliable they are (``measure``: aggregated ``skill`` or ``gold``
    accuracy): approve the submitted work of those at or above a threshold, or block or message those
    under it (``crowd.services.reliability.act_by_reliability``).

    Security behavior: approving needs the ``review`` permission, blocking the ``block`` permission,
    messaging the ``notify`` permission, all with CSRF; the scores are computed here from the stored
    validations and gold answers, never taken from the request, and every decision goes through the
    one-by-one services (payments recorded once, blocks told to the platform, messages only to the
    batch's own workers). A malformed threshold, measure or action is a message, not an error page.
    """
    from annotation.permissions import allowed, refuse
    from crowd.services.reliability import act_by_reliability

    action = request.POST.get("action", "")
    needed = {"approve": "review", "message": "notify"}.get(action, "block")
    if not allowed(request, needed):
        return refuse(request, needed)
    batch = get_object_or_404(Batch, pk=pk)
    post = request.POST
    try:
        threshold = float(post.get("threshold", ""))
        min_n = int(post.get("min_labels", "1") or "1")
        summary = act_by_reliability(
            batch,
            action,
            post.get("measure", "skill"),
            threshold,
            max(1, min_n),
            reason=post.get("reason", ""),
            subject=post.get("subject", ""),
            text=post.get("message", ""),
        )
    except (ValueError, OverflowError) as exc:
        messages.error(request, f"Nothing was changed: {plain(str(exc))}")
        return redirect("annotation:batch", pk=pk)
    verb = {"approve": "Approved", "block": "Blocked", "message": "Messaged"}[action]
    noun = "submission(s)" if action == "approve" else "worker(s)"
    messages.success(request, f"{verb} {len(summary['done'])} {noun}: {summary['done'][:20]}.")
    for skipped in summary["skipped"][:50]:
        who = skipped.get("worker") or f"submission {skipped.get('assignment')}"
        messages.warning(request, f"Skipped {who}: {plain(skipped['reason'])}.")
    return redirect("annotation:batch", pk=pk)
    verb = "Approved" if action == "approve" else "Blocked"
    noun = "submission(s)" if action == "approve" else "worker(s)"
    messages.success(request, f"{verb} {len(summary['done'])} {noun}: {summary['done'][:20]}.")
    for skipped in summary["skipped"][:50]:
        who = skipped.get("worker") or f"submission {skipped.get('assignment')}"
        messages.warning(request, f"Skipped {who}: {plain(skipped['reason'])}.")
    return redirect("annotation:batch", pk=pk)
