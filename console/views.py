"""Researcher-facing pages: corpora, documents (read page by page), batches and jobs.

Security behavior: every page here needs the researcher ``view`` permission
(:mod:`annotation.permissions`), or ``CROWDQA_PUBLIC_DASHBOARD`` (read-only, demo only). Nothing here
changes data; changes go through the public commands or the researcher action pages
(:mod:`console.review_views`, :mod:`console.launch_views`), each behind its own permission.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count
from django.http import FileResponse, Http404, HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.loader import render_to_string
from django.views.decorators.http import require_safe
from django.views.generic import DetailView, TemplateView

from annotation.hits import handler_for
from annotation.models import HIT, Assignment, Batch, Corpus, Document, Job, ModelCheck, Passage, QAPair
from annotation.permissions import ResearcherRequiredMixin, can_view
from console.progress import live_progress
from crowd.models import Worker
from crowd.providers.traits import traits_for
from crowd.services.auto_approval import describe as describe_delay
from crowd.services.auto_approval import summary as auto_approval_summary
from crowd.services.dashboard import batch_stats
from evaluation.services.model_checks import fooled_rates, loop_settings, validation_summary
from evaluation.services.options_only import options_only_rates


def health(request: HttpRequest) -> JsonResponse:
    """Liveness probe for scripts and load balancers (no data, no login)."""
    return JsonResponse({"status": "ok"})


class HomeView(ResearcherRequiredMixin, TemplateView):
    """Corpora with their counts, recent batches and recent jobs."""

    template_name = "annotation/home.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        qa_counts = dict(QAPair.objects.order_by().values_list("corpus").annotate(n=Count("id")))
        passage_counts = dict(Passage.objects.order_by().values_list("corpus").annotate(n=Count("id")))
        accepted_counts = dict(
            Passage.objects.accepted().order_by().values_list("corpus").annotate(n=Count("id"))
        )
        corpora = list(Corpus.objects.annotate(n_documents=Count("documents")).order_by("name"))
        for corpus in corpora:
            corpus.n_qa_pairs = qa_counts.get(corpus.pk, 0)
            corpus.n_passages = passage_counts.get(corpus.pk, 0)
            corpus.n_accepted = accepted_counts.get(corpus.pk, 0)
        context["corpora"] = corpora
        context["batches"] = Batch.objects.select_related("corpus").annotate(
            n_hits=Count("hits", distinct=True)
        )[:20]
        context["jobs"] = Job.objects.all()[:10]
        return context


class CorpusDetailView(ResearcherRequiredMixin, DetailView):
    """One corpus: its documents with page and QA-pair counts."""

    model = Corpus
    slug_field = "name"
    slug_url_kwarg = "name"
    template_name = "annotation/corpus.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        corpus: Corpus = self.object
        context["documents"] = corpus.documents.annotate(n_qa_pairs=Count("qa_pairs")).only(
            "id", "name", "title", "page_starts", "original_split", "pdf", "metadata"
        )
        context["type_counts"] = (
            corpus.qa_pairs.order_by()
            .values("question_type")
            .annotate(n=Count("id"))
            .order_by("question_type")
        )
        context["split_counts"] = (
            corpus.qa_pairs.order_by()
            .values("original_split")
            .annotate(n=Count("id"))
            .order_by("original_split")
        )
        context["n_passages"] = corpus.passages.count()
        return context


class DocumentDetailView(ResearcherRequiredMixin, DetailView):
    """A document read page by page (``?page=N``), with the QA pairs written about it."""

    model = Document
    template_name = "annotation/document.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        document: Document = self.object
        try:
            page = int(self.request.GET.get("page", "1"))
            start, end = document.page_bounds(page)
        except ValueError as exc:
            raise Http404(str(exc)) from exc
        context.update(
            page=page,
            page_text=document.text[start:end],
            pages=range(1, document.num_pages + 1),
            qa_pairs=document.qa_pairs.prefetch_related("spans", "steps")[:200],
        )
        return context


@require_safe
def document_pdf(request: HttpRequest, pk: int) -> FileResponse:
    """Serve a document's original PDF (researchers only; HIT pages use their own access rules)."""
    if not can_view(request):
        raise Http404("No such document")
    document = get_object_or_404(Document, pk=pk)
    if not document.pdf:
        raise Http404(f"Document({pk}) has no PDF")
    return FileResponse(document.pdf.open("rb"), content_type="application/pdf")


class BatchDetailView(ResearcherRequiredMixin, DetailView):
    """A batch with HIT and assignment counts by status."""

    model = Batch
    template_name = "annotation/batch.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        batch: Batch = self.object
        context["hit_counts"] = (
            batch.hits.order_by().values("status").annotate(n=Count("id")).order_by("status")
        )
        context["assignment_counts"] = (
            Assignment.objects.filter(hit__batch=batch)
            .order_by()
            .values("status")
            .annotate(n=Count("id"))
            .order_by("status")
        )
        context["n_hits"] = HIT.objects.filter(batch=batch).count()
        context["platform_traits"] = traits_for(batch.provider)
        context["assignments"] = (
            Assignment.objects.filter(hit__batch=batch)
            .exclude(status=Assignment.Status.ACCEPTED)
            .select_related("worker", "hit__document")
            .annotate(n_pairs=Count("qa_pairs"))
            .order_by("-submitted_at")[:200]
        )
        context["first_hit"] = batch.hits.order_by("position").first()
        context["stats"] = batch_stats(batch)
        context["children"] = batch.children.all()
        context["progress"] = live_progress(batch)
        context["live"] = polls(batch, context["progress"])
        context["auto_approval"] = auto_approval_summary(batch)
        context["batch_workers"] = list(
            Worker.objects.filter(assignments__hit__batch=batch).distinct().order_by("pseudonym")[:500]
        )
        platform_delay = traits_for(batch.provider).platform_auto_approval_seconds
        context["platform_auto_approval"] = describe_delay(platform_delay) if platform_delay else ""
        context["model_loop"] = loop_settings(batch)
        if context["model_loop"] or ModelCheck.objects.filter(assignment__hit__batch=batch).exists():
            context["model_rates"] = fooled_rates(batch)
            context["model_validation"] = validation_summary(batch)
        if handler_for(batch.kind).options_only_check:
            context["options_only"] = options_only_rates(batch)
        return context


LIVE_STATUSES = (Batch.Status.PUBLISHED, Batch.Status.PAUSED)
"""Batches whose page keeps polling its progress (work may still arrive)."""


def polls(batch: Batch, progress: dict[str, Any]) -> bool:
    """The page keeps polling: work may still arrive, or a publish, sync or pay job is running."""
    return batch.status in LIVE_STATUSES or any(j["status"] == "running" for j in progress["jobs"])


@require_safe
def batch_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """The batch's live progress as JSON (with the card's HTML), polled by its page every few seconds.

    Security behavior: the researcher ``view`` permission (or the public demo dashboard) is needed; any
    other caller gets a JSON 403 naming the sign-in page (a polling script follows no redirect). It
    only reads, so it needs no CSRF token; worker rows carry pseudonyms, never platform ids.
    """
    if not can_view(request):
        return JsonResponse(
            {"error": "Sign in as a researcher to follow this batch.", "login": "/accounts/login/"},
            status=403,
        )
    batch = get_object_or_404(Batch, pk=pk)
    progress = live_progress(batch)
    progress["live"] = polls(batch, progress)
    progress["html"] = render_to_string(
        "annotation/_progress.html", {"progress": progress, "batch": batch}, request=request
    )
    return JsonResponse(progress)


class JobDetailView(ResearcherRequiredMixin, DetailView):
    """A job's status, progress and result."""

    model = Job
    template_name = "annotation/job.html"
