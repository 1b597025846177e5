"""Researcher pages of the benchmarks: releases with their runs, a leaderboard per release, one run.

Security behavior: every page requires a researcher (the ``view`` permission, or
``CROWDQA_PUBLIC_DASHBOARD``; :mod:`annotation.permissions`). Starting a run (the leaderboard's Start
benchmark form, a POST with Django's CSRF protection) needs the ``benchmark`` permission even on the demo
dashboard; without it the form is not shown (a sign-in link instead). The release directory
comes from the catalogue row, never from the request; the model is the packaged default or the
configured endpoint, never a path typed into the form.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe
from django.views.generic import DetailView, ListView

from annotation.permissions import ResearcherRequiredMixin, can_view, researcher_action
from config.storage import SCHEME, shared_key, shared_storage
from evaluation.forms import MCQ_METRIC_CHOICES, QA_METRIC_CHOICES, StartBenchmarkForm
from evaluation.models import BenchmarkRun
from evaluation.services.items import BenchmarkInputError
from evaluation.services.leaderboard import METRIC_COLUMNS, leaderboard
from exports.models import Release

logger = logging.getLogger(__name__)


class ReleaseBenchmarksListView(ResearcherRequiredMixin, ListView):
    """Every registered release with its benchmark runs (any status), newest first."""

    template_name = "evaluation/index.html"
    context_object_name = "releases"

    def get_queryset(self) -> Any:
        return Release.objects.prefetch_related(
            Prefetch("benchmark_runs", queryset=BenchmarkRun.objects.order_by("-pk"), to_attr="runs")
        )


class LeaderboardView(ResearcherRequiredMixin, DetailView):
    """One release's leaderboard: a row per done run, then the tables per question type / answer source."""

    model = Release
    template_name = "evaluation/leaderboard.html"
    context_object_name = "release"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(_leaderboard_context(self.object, kwargs.get("form")))
        return context


def _leaderboard_context(release: Release, form: StartBenchmarkForm | None = None) -> dict[str, Any]:
    return {
        "release": release,
        "board": leaderboard(release),
        "pending": release.benchmark_runs.exclude(status=BenchmarkRun.Status.DONE).order_by("-pk"),
        "form": form or StartBenchmarkForm(release),
    }


@require_POST
@researcher_action("benchmark")
def start_benchmark(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue a benchmark run on the ``gpu`` queue (or reuse an identical one) and show it.

    Security behavior: needs the ``benchmark`` permission (anonymous visitors are sent to sign in, other
    accounts get 403; the form is shown only to those who may use it). Bad choices come back on the
    leaderboard page next to their field, with what was chosen kept.
    """
    # The run service and the task module load the ML stack; only this action needs them.
    from evaluation.services.runs import queue_run
    from exports.release_files import ReleaseError

    release = get_object_or_404(Release, pk=pk)
    form = StartBenchmarkForm(release, request.POST)
    if form.is_valid():
        try:
            run, _ = queue_run(release, form.cleaned_data)
        except (BenchmarkInputError, ReleaseError) as exc:
            form.place_error(str(exc))
        else:
            return redirect("evaluation:run", pk=run.pk)
    context = _leaderboard_context(release, form)
    return render(request, "evaluation/leaderboard.html", context, status=400)


class BenchmarkRunDetailView(ResearcherRequiredMixin, DetailView):
    """One run: status and progress, error, model, parameters, prompts, timings and figures."""

    model = BenchmarkRun
    queryset = BenchmarkRun.objects.select_related("release")
    template_name = "evaluation/run.html"
    context_object_name = "run"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Adds the figures, requested metrics and parameters under the labels of the Start form."""
        context = super().get_context_data(**kwargs)
        run: BenchmarkRun = self.object
        labels = dict(METRIC_COLUMNS)
        known = [(labels[k], run.metrics[k]) for k, _ in METRIC_COLUMNS if k in (run.metrics or {})]
        rest = [(k, v) for k, v in (run.metrics or {}).items() if k not in labels]
        context["figures"] = known + rest
        context["requested"] = [metric_label(m) for m in run.metrics_requested or []]
        context["parameters"] = [
            (PARAMETER_LABELS.get(k, k.replace("_", " ").capitalize()), _parameter(k, v))
            for k, v in (run.params or {}).items()
        ]
        context["has_results"] = has_results(run)
        return context


PARAMETER_LABELS = {
    "release_dir": "Release",
    "system": "System",
    "split": "Split",
    "metrics": "Metrics",
    "model": "Model",
    "limit": "Only the first N items",
    "judge": "Judge",
}
"""The Start benchmark form's labels for a run's stored parameters (others show their key in words)."""


def metric_label(key: str) -> str:
    """The Start form's label of a requested metric (``rougeL`` and ``rouge_l`` are both ROUGE-L)."""
    labels = {k.lower().replace("_", ""): label for k, label in QA_METRIC_CHOICES + MCQ_METRIC_CHOICES}
    return labels.get(str(key).lower().replace("_", ""), str(key))


def _parameter(key: str, value: Any) -> str:
    """A stored parameter as the Start form would name it (metrics by their labels)."""
    if key == "metrics" and isinstance(value, (list, tuple)):
        return ", ".join(metric_label(m) for m in value) or "–"
    return _readable(value)


def _readable(value: Any) -> str:
    """A parameter value as text: lists joined, nothing as a dash, server paths reduced to their name."""
    if value in (None, "", [], {}):
        return "–"
    if isinstance(value, (list, tuple)):
        return ", ".join(_readable(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_readable(v)}" for k, v in value.items())
    text = str(value)
    return Path(text).name if text.startswith("/") else text


def results_file(run: BenchmarkRun) -> Any:
    """The run's per-item results, opened for reading, or None.

    A local path is opened only when it resolves inside ``<VAR_DIR>/benchmarks``; an ``s3://`` URL only
    when it names a ``benchmarks/`` object of this host's shared storage (``CROWDQA_STORAGE_URL``) that
    exists. The caller closes the file (FileResponse does).
    """
    if not run.results_path:
        return None
    key = shared_key(run.results_path)
    if key is not None:
        if not key.startswith("benchmarks/") or ".." in key.split("/"):
            return None
        try:
            return shared_storage().open(key, "rb")
        except FileNotFoundError:
            return None
    if run.results_path.startswith(SCHEME):  # stored elsewhere than this host's storage
        return None
    root = (Path(settings.VAR_DIR) / "benchmarks").resolve()
    path = Path(run.results_path).resolve()
    return path.open("rb") if path.is_relative_to(root) and path.is_file() else None


def has_results(run: BenchmarkRun) -> bool:
    """Whether :func:`results_file` would serve something (the file is closed again)."""
    handle = results_file(run)
    if handle is None:
        return False
    handle.close()
    return True


@require_safe
def run_results(request: HttpRequest, pk: int) -> FileResponse:
    """Download a run's per-item results JSON.

    Security behavior: researchers only (others get 404, as release files do); the path comes from the
    run's row, never from the request, and is served only when it resolves inside
    ``<VAR_DIR>/benchmarks`` (a row pointing elsewhere, or a symbolic link out of it, is refused) or
    names a ``benchmarks/`` object of this host's shared storage (streamed from there).
    """
    if not can_view(request):
        raise Http404("No such run")
    run = get_object_or_404(BenchmarkRun, pk=pk)
    handle = results_file(run)
    if handle is None:
        logger.warning("BenchmarkRun(%s): no results file to serve (%r)", pk, run.results_path)
        raise Http404(f"BenchmarkRun({pk}) has no per-item results")
    return FileResponse(
        handle,
        as_attachment=True,
        filename=f"{run.release.name}-{run.release.version}-{run.system}-{run.split}-run{run.pk}.json",
        content_type="application/json",
    )
