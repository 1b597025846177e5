"""Data in through the browser: the upload form and the upload job's page (``annotation.services.uploads``).

Security behavior: the form needs the ``import`` permission (``annotation.add_corpus``) to be read or
posted (an anonymous visitor goes to the sign-in page, any other account gets the 403 page naming the
permission) and a POST needs Django's CSRF token. What one request may upload is capped while it streams
in (``CROWDQA_UPLOAD_MAX_MB``, :mod:`config.uploads`), then :func:`~annotation.services.uploads.check_upload`
refuses wrong file types, more than 100 files, and zips that cannot be read, are encrypted, hold a path
outside their folder or unpack to too much, before anything is stored; file names are reduced to safe
characters and stored under a random folder of the storage. The data itself is checked by the same
importer as the ``import_*`` commands, in the job; a malformed file fails the job with the importer's
message (paths relative to the upload, no server path) and imports nothing. The job's page needs the
``view`` permission and shows only upload jobs (any other id is a 404).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.generic import DetailView

from annotation.models import Corpus, Job
from annotation.permissions import ResearcherRequiredMixin, researcher_action
from annotation.services.dataset_imports import LAYOUTS
from annotation.services.uploads import (
    JOB_KIND,
    MAX_FILES,
    STAGES,
    SUFFIXES,
    UploadError,
    UploadRequest,
    start_upload,
)
from config.uploads import upload_limit_bytes

TEMPLATE = "annotation/upload.html"


class UploadForm(forms.Form):
    """What the files hold and which corpus they create or extend (the files are read apart)."""

    layout = forms.ChoiceField(
        label="The files hold", choices=[(key, layout.label) for key, layout in LAYOUTS.items()]
    )
    target = forms.ChoiceField(
        label="Corpus",
        choices=[("new", "Create a new corpus"), ("existing", "Add to an existing corpus")],
        initial="new",
        widget=forms.RadioSelect,
    )
    new_name = forms.CharField(
        label="New corpus name",
        max_length=100,
        required=False,
        help_text="Letters, digits, hyphens and underscores, such as physics-notes.",
    )
    existing = forms.ChoiceField(label="Existing corpus", required=False)
    min_paragraph_chars = forms.IntegerField(
        label="Shortest passage (characters)",
        min_value=1,
        max_value=10_000,
        initial=40,
        help_text="Documents only: shorter blocks (headings, page numbers) do not become passages.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["existing"].choices = [("", "Choose a corpus")] + [
            (c.name, f"{c.name} ({c.get_kind_display().lower()})") for c in Corpus.objects.order_by("name")
        ]

    def clean(self) -> dict[str, Any]:
        """The corpus name: a new slug, or an existing corpus chosen from the list."""
        data = super().clean()
        if data.get("target") == "new":
            name = (data.get("new_name") or "").strip()
            if not name:
                self.add_error("new_name", "Name the new corpus.")
            else:
                try:
                    validate_slug(name)
                except ValidationError:
                    self.add_error("new_name", "Use only letters, digits, hyphens and underscores.")
                if name.lower() == "upload":  # /corpora/upload/ is this form
                    self.add_error("new_name", "The name 'upload' is reserved: choose another.")
            data["corpus"] = name
        elif data.get("target") == "existing":
            if not data.get("existing"):
                self.add_error("existing", "Choose the corpus to add to.")
            data["corpus"] = data.get("existing") or ""
        return data


def _context(form: UploadForm, **extra: Any) -> dict[str, Any]:
    return {
        "form": form,
        "layouts": LAYOUTS,
        "suffixes": {key: ", ".join(values) for key, values in SUFFIXES.items()},
        "limit_mb": upload_limit_bytes() // (1024 * 1024),
        "max_files": MAX_FILES,
        "accept": ",".join(sorted({s for values in SUFFIXES.values() for s in values})),
        **extra,
    }


@researcher_action("import")
def upload(request: HttpRequest) -> HttpResponse:
    """GET: the form (query ``layout``, ``target``, ``new_name``, ``existing`` pre-fill it, so a refused
    upload's page can send the researcher back with the choices kept). POST: check, store, start the
    import job and go to its page; a refusal shows the form again with the choices kept (status 400).
    """
    if request.method != "POST":
        initial = {k: v for k, v in request.GET.items() if k in UploadForm.base_fields and v}
        return render(request, TEMPLATE, _context(UploadForm(initial=initial)))
    form = UploadForm(request.POST)
    refused = getattr(request, "upload_refused", "")
    if refused:
        return render(request, TEMPLATE, _context(form, error=refused), status=400)
    if not form.is_valid():
        return render(request, TEMPLATE, _context(form), status=400)
    data = form.cleaned_data
    files = request.FILES.getlist("files")
    wanted = UploadRequest(
        layout=data["layout"],
        corpus=data["corpus"],
        new=data["target"] == "new",
        min_paragraph_chars=data["min_paragraph_chars"],
    )
    try:
        job = start_upload(wanted, files, request.user)
    except UploadError as exc:
        return render(request, TEMPLATE, _context(form, error=str(exc)), status=400)
    return redirect("annotation:upload-job", pk=job.pk)


class UploadJobView(ResearcherRequiredMixin, DetailView):
    """One upload's job: its stage and progress (the page refreshes itself while it runs), the import's
    summary with a link to the corpus, or the importer's refusal with a way back to the form."""

    queryset = Job.objects.filter(kind=JOB_KIND)
    template_name = "annotation/upload_job.html"
    context_object_name = "job"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        """Adds the stage's words, the file list, the corpus when it exists and the way back."""
        context = super().get_context_data(**kwargs)
        job: Job = self.object
        params = job.params or {}
        result = job.result or {}
        running = job.status in (Job.Status.PENDING, Job.Status.RUNNING)
        layout = LAYOUTS.get(params.get("layout", ""))
        again = {"layout": params.get("layout", "")}
        if params.get("new"):
            again.update(target="new", new_name=params.get("corpus", ""))
        else:
            again.update(target="existing", existing=params.get("corpus", ""))
        context.update(
            running=running,
            layout_label=layout.label if layout else params.get("layout", ""),
            stage=STAGES.get(result.get("stage", ""), "Waiting for a worker") if running else "",
            files=params.get("files") or [],
            corpus=Corpus.objects.filter(name=params.get("corpus", "")).first()
            if job.status == Job.Status.DONE
            else None,
            refused=bool(result.get("refused")),
            again_url=f"{reverse('annotation:upload')}?{urlencode(again)}",
        )
        return context
