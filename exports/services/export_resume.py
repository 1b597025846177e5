"""Which earlier export built a release again asked for (``export_release`` run again to publish it, or
a retried job): on this host's disk, or, on any host, in the shared storage (``CROWDQA_STORAGE_URL``).

An export job records the directory it wrote (``result["written"]``) and, once registered, its catalogue
row (``result["release_id"]``); a request of the same release finds either.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from annotation.models import Job
from exports.models import Release

if TYPE_CHECKING:
    from exports.services.exporting import ExportRequest


def written_earlier(job: Job, request: ExportRequest) -> Optional[Path]:
    """The release directory an earlier attempt of this job wrote here, if it is there and is this release."""
    from exports.release_files import ReleaseError, read_manifest

    path = (job.result or {}).get("written")
    if not path or Path(path) != request.destination.resolve():
        return None
    try:
        manifest = read_manifest(Path(path))
    except ReleaseError:
        return None
    if manifest.get("name") == request.name and str(manifest.get("version")) == request.version:
        return Path(path)
    return None


def stored_earlier(job: Job, request: ExportRequest) -> Optional[Release]:
    """The catalogue row of the release ``job`` built and copied to the shared storage, when it is this
    request's release: a build of another host (or of this one, its folder since removed) is found there.
    """
    from exports.release_store import is_stored

    result = job.result or {}
    if not result.get("written") or Path(result["written"]).name != request.destination.name:
        return None
    release = Release.objects.filter(pk=result.get("release_id")).first()
    if release is None or not is_stored(release.path):
        return None
    if release.name != request.name or release.version != request.version:
        return None
    return release


def built_earlier(request: ExportRequest) -> Optional[Job]:
    """The latest export job of the same release that wrote it, when ``request`` asks to publish it:
    here (its directory is on this host's disk) or on any host (it is in the shared storage)."""
    if not request.publish:
        return None
    from exports.services.exporting import JOB_KIND, ExportRequest

    jobs = Job.objects.filter(kind=JOB_KIND, result__has_key="written").order_by("-pk")
    for job in jobs.only("pk", "params", "result"):
        if not request.same_release(ExportRequest.from_params(job.params)):
            continue
        if written_earlier(job, request) or stored_earlier(job, request):
            return job
    return None
