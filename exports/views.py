"""Researcher pages of the exports app: the release catalogue, one release's card, files and checks, the
New release page and the status of an export job.

Security behavior: every page requires a researcher (staff, or the public demo dashboard; see
:func:`annotation.permissions.can_view`). Starting an export (POST, with Django's CSRF protection) needs
the ``export`` permission even on the demo dashboard (:mod:`annotation.permissions`): without it the
form is not shown (a sign-in link instead), so no button answers 403. Releases are written only into
``CROWDQA_RELEASES_DIR``; the request never names a server path. Files are served from a
release directory only when ``manifest.json`` lists their exact relative path (or the path is
``manifest.json`` itself) and the resolved file lies inside the directory, so neither ``..`` nor a
symbolic link can reach other files. The directory path comes from the catalogue row, never from the
request.
"""

from __future__ import annotations

import io
import logging
import posixpath
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

from django.conf import settings
from django.contrib import messages
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, redirect
from django.urls import NoReverseMatch, reverse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST, require_safe
from django.views.generic import DetailView, FormView, ListView

from annotation.models import Job
from annotation.permissions import ResearcherRequiredMixin, allowed, can_view, refuse, researcher_action
from exports.checks import PROBLEM_CODES
from exports.forms import ReleaseForm
from exports.models import Release
from exports.services.exporting import JOB_KIND, ExportRequest, ExportRequestError, start_export

# exports.release (pyarrow, matplotlib through the card plots) is imported inside the views that read
# releases: this module loads with the URLconf in every web worker, including those serving HITs.
from exports.splits import SPLITS

logger = logging.getLogger(__name__)

CARD = "card.md"
DIFF_SAMPLE = 10
"""Ids shown per diff category; the counts cover all of them."""

INLINE_SUFFIXES = {".png": "image/png", ".md": "text/markdown; charset=utf-8"}


def listed_files(manifest: dict[str, Any]) -> set[str]:
    """Relative paths a release page may serve: the manifest's files and the manifest itself."""
    from exports.release_files import MANIFEST

    return {str(entry["path"]) for entry in manifest.get("files") or []} | {MANIFEST}


def _benchmarks_url(release: Release) -> str:
    """The benchmark page of a release (built by the evaluation app; a plain path until it is mounted)."""
    try:
        return reverse("evaluation:leaderboard", args=[release.pk])
    except NoReverseMatch:
        return f"/benchmarks/release/{release.pk}/"


class ReleaseListView(ResearcherRequiredMixin, ListView):
    """Every registered release: name, version, kind, items per split, when it was built and from what."""

    model = Release
    template_name = "exports/release_list.html"
    context_object_name = "releases"

    def get_queryset(self) -> Any:
        """All releases, newest first within a name."""
        return Release.objects.order_by("name", "-created", "-pk")

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Adds ``splits`` (column order) and per-release ``rows`` with counts in that order."""
        context = super().get_context_data(**kwargs)
        context["splits"] = SPLITS
        context["rows"] = [
            {"release": r, "counts": [r.counts.get(s) for s in SPLITS]} for r in context["releases"]
        ]
        return context


class ReleaseDetailView(ResearcherRequiredMixin, DetailView):
    """One release: its dataset card, files with rows and sha256, an integrity check and a diff form.

    ``?against=<pk>`` compares another release of the same name (the older of the two is "old").
    """

    model = Release
    template_name = "exports/release_detail.html"
    context_object_name = "release"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Manifest, card HTML, file rows, verification, diff choices and result, benchmark link."""
        context = super().get_context_data(**kwargs)
        release: Release = self.object
        context["benchmarks_url"] = _benchmarks_url(release)
        context["others"] = list(
            Release.objects.filter(name=release.name).exclude(pk=release.pk).order_by("-created", "-pk")
        )
        from exports.release_files import MANIFEST, ReleaseError, read_manifest
        from exports.release_store import release_root

        try:
            root = release_root(release)
            manifest = read_manifest(root)
        except ReleaseError as exc:
            context["error"] = str(exc)
            return context
        listed = listed_files(manifest)

        def file_url(relative: str) -> Optional[str]:
            normal = posixpath.normpath(relative)
            if normal not in listed:
                return None
            return reverse("exports:file", args=[release.pk, normal])

        context["manifest"] = manifest
        context["manifest_url"] = file_url(MANIFEST)
        context["files"] = [
            {**entry, "url": file_url(str(entry["path"]))} for entry in manifest.get("files") or []
        ]
        if CARD in listed and (root / CARD).is_file():
            from exports.card_html import render_card_html  # markdown-it: only for a release's page

            context["card_html"] = render_card_html((root / CARD).read_text(encoding="utf-8"), file_url)
        context["verify"] = self._verify(root)
        context["diff"] = self._diff(release)
        return context

    @staticmethod
    def _verify(root: Path) -> dict[str, Any]:
        """verify_release as ``{"ok": True, "files", "rows"}`` or ``{"ok": False, "problems"}``."""
        from exports.release_files import ReleaseError, ReleaseIntegrityError, verify_release

        try:
            return {"ok": True, **verify_release(root)}
        except ReleaseIntegrityError as exc:
            return {"ok": False, "problems": exc.problems}
        except ReleaseError as exc:
            return {"ok": False, "problems": [str(exc)]}

    def _diff(self, release: Release) -> Optional[dict[str, Any]]:
        """The diff against ``?against=<pk>`` (a release of the same name), or None when not asked."""
        raw = self.request.GET.get("against")
        if not raw:
            return None
        other = (
            Release.objects.filter(name=release.name, pk=int(raw)).exclude(pk=release.pk).first()
            if raw.isdecimal() and raw.isascii()
            else None
        )
        if other is None:
            return {"error": f"no other release named {release.name!r} with id {raw!r}"}
        from exports.release_files import ReleaseError, diff_releases
        from exports.release_store import release_root

        older_first = (other.created, other.pk) <= (release.created, release.pk)
        old, new = (other, release) if older_first else (release, other)
        try:
            diff = diff_releases(release_root(old), release_root(new))
        except ReleaseError as exc:
            return {"error": str(exc), "old": old, "new": new}
        return {
            "old": old,
            "new": new,
            "rows": [
                {"label": label, "count": len(ids), "sample": ids[:DIFF_SAMPLE]}
                for label, ids in (
                    ("added", diff.added),
                    ("removed", diff.removed),
                    ("changed", diff.changed),
                    ("moved", diff.moved),
                )
            ],
        }


@require_safe
def release_file(request: HttpRequest, pk: int, relpath: str) -> HttpResponse:
    """Serve one file of a release: only paths the manifest lists, only inside the release directory.

    With ``CROWDQA_SIGNED_URL_SECONDS`` set, a file of a release in the shared storage is a redirect to a
    signed URL of the storage valid that long, instead of streaming through this host's copy.

    Security behavior: researchers only (others get 404, as for document PDFs); the path must equal a
    manifest entry (or be ``manifest.json``) and resolve inside the release directory; PNG and Markdown
    are shown inline, data files are downloads. A signed URL is made only for a listed file of a
    release whose stored manifest matches the catalogue's digest and whose object has the manifest's
    size; it names that one object and expires after the configured seconds.
    """
    if not can_view(request):
        raise Http404("No such release file")
    release = get_object_or_404(Release, pk=pk)
    from exports.release_files import ReleaseError, read_manifest
    from exports.release_store import is_stored, release_root, signed_file_url

    seconds = int(getattr(settings, "CROWDQA_SIGNED_URL_SECONDS", 0) or 0)
    if seconds > 0 and is_stored(release.path):
        name = relpath.rsplit("/", 1)[-1]
        inline = INLINE_SUFFIXES.get(Path(name).suffix)
        try:
            url = signed_file_url(release, relpath, seconds, content_disposition_header(inline is None, name))
        except (LookupError, ReleaseError) as exc:
            raise Http404(f"Release({pk}): {exc}") from exc
        return HttpResponseRedirect(url)

    try:
        root = release_root(release).resolve()
        listed = listed_files(read_manifest(root))
    except ReleaseError as exc:
        raise Http404(f"Release({pk}): {exc}") from exc
    if relpath not in listed:
        raise Http404(f"Release({pk}) lists no file {relpath!r}")
    path = (root / relpath).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        logger.warning("Release(%s): refused %r (outside the release or missing)", pk, relpath)
        raise Http404(f"Release({pk}) has no file {relpath!r}")
    content_type = INLINE_SUFFIXES.get(path.suffix)
    return FileResponse(
        path.open("rb"),
        as_attachment=content_type is None,
        filename=path.name,
        content_type=content_type or "application/octet-stream",
    )


class _Sink(io.RawIOBase):
    """A write-only stream that hands back what was written since the last ``take`` (zip streaming)."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self.chunks)
        self.chunks.clear()
        return out


def zip_chunks(root: Path, relpaths: list[str], folder: str) -> Iterator[bytes]:
    """Yield a zip archive of ``root``'s ``relpaths`` (under ``folder/``) piece by piece, never whole.

    ``zipfile`` writes to an unseekable stream with data descriptors, so the archive streams as it is
    compressed: a release of hundreds of megabytes needs no temporary copy.
    """
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for relpath in relpaths:
            with (
                (root / relpath).open("rb") as src,
                archive.open(f"{folder}/{relpath}", "w", force_zip64=True) as dst,
            ):
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
                    yield sink.take()
            yield sink.take()
    yield sink.take()


@require_safe
def release_archive(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """Download a whole release as one zip file: the manifest and every file it lists.

    Security behavior: as :func:`release_file`: researchers only (others get 404); only the manifest's
    own entries are packed, each resolved inside the release directory (a listed path that escapes it by
    ``..`` or a symbolic link refuses the whole download); the directory comes from the catalogue row.
    """
    if not can_view(request):
        raise Http404("No such release")
    release = get_object_or_404(Release, pk=pk)
    from exports.release_files import ReleaseError, read_manifest
    from exports.release_store import release_root

    try:
        root = release_root(release).resolve()
        listed = sorted(listed_files(read_manifest(root)))
    except ReleaseError as exc:
        raise Http404(f"Release({pk}): {exc}") from exc
    for relpath in listed:
        path = (root / relpath).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            logger.warning(
                "Release(%s): archive refused for %r (outside the release or missing)", pk, relpath
            )
            raise Http404(f"Release({pk}) has no file {relpath!r}")
    folder = f"{release.name}-{release.version}"
    response = StreamingHttpResponse(zip_chunks(root, listed, folder), content_type="application/zip")
    response["Content-Disposition"] = content_disposition_header(True, f"{folder}.zip")
    return response


class ReleaseCreateView(ResearcherRequiredMixin, FormView):
    """The New release page: a form for ``export_release``; submitting it queues the export job.

    Reading the page needs ``view`` (the form is shown only to accounts that may ``export``); posting
    it needs ``export``.
    """

    form_class = ReleaseForm
    template_name = "exports/release_new.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Adds the folder releases are written into."""
        context = super().get_context_data(**kwargs)
        context["releases_dir"] = settings.CROWDQA_RELEASES_DIR
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        """Needs the ``export`` permission (see the module's security behaviour)."""
        if not allowed(request, "export"):
            return refuse(request, "export")
        return super().post(request, *args, **kwargs)

    def form_valid(self, form: ReleaseForm) -> HttpResponse:
        """Queue the export and go to its status page."""
        assert form.export_request is not None  # set by ReleaseForm.clean
        try:
            job = start_export(form.export_request)
        except ExportRequestError as exc:  # e.g. the version was taken meanwhile
            form.add_error(None, str(exc))
            return self.form_invalid(form)
        return redirect("exports:job", pk=job.pk)


class ExportJobView(ResearcherRequiredMixin, DetailView):
    """One export job: status and progress (the page refreshes itself while it runs), the release when
    done, and for a refused release the problems with an "Export anyway" button."""

    queryset = Job.objects.filter(kind=JOB_KIND)
    template_name = "exports/export_job.html"
    context_object_name = "job"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Adds the request, the release row when done, the refusal and permissions."""
        context = super().get_context_data(**kwargs)
        job: Job = self.object
        result = job.result or {}
        context["request_params"] = ExportRequest.from_params(job.params)
        context["running"] = job.status in (Job.Status.PENDING, Job.Status.RUNNING)
        context["release"] = (
            Release.objects.filter(pk=result["release_id"]).first() if result.get("release_id") else None
        )
        context["refused"] = result.get("refused") or []
        context["warnings"] = result.get("warnings") or []
        return context


@require_POST
@researcher_action("export")
def confirm_export(request: HttpRequest, pk: int) -> HttpResponse:
    """Export anyway: a new job with the same request, allowing the problems the refused job reported."""
    job = get_object_or_404(Job, pk=pk, kind=JOB_KIND)
    codes = {p.get("code") for p in (job.result or {}).get("refused") or []} & set(PROBLEM_CODES)
    if job.status != Job.Status.FAILED or not codes:
        messages.error(request, "This export was not refused, so there is nothing to confirm.")
        return redirect("exports:job", pk=job.pk)
    previous = ExportRequest.from_params(job.params)
    allowed = tuple(c for c in PROBLEM_CODES if c in codes or c in previous.allow)
    try:
        new = start_export(ExportRequest.from_params({**job.params, "allow": list(allowed)}))
    except ExportRequestError as exc:
        messages.error(request, f"The export could not start again: {exc}")
        return redirect("exports:job", pk=job.pk)
    return redirect("exports:job", pk=new.pk)
