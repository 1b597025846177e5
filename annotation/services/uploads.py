"""Data in through the browser: files a researcher uploads create or extend a corpus, as a job.

1. :func:`check_upload` refuses what cannot be an upload of the chosen layout before anything is stored:
   a file type the layout does not read, too many files, two files of one name, a zip that cannot be
   listed, is password-protected, holds a path outside its folder, too many entries or too many bytes
   once unpacked. It reads no data: whether the files make a dataset is the importer's to say.
2. :func:`start_upload` saves each file through Django's default storage (``uploads/<token>/``: the local
   media folder, or S3 with ``CROWDQA_STORAGE_URL``, so the web process and the worker need not share a
   disk), records a :class:`~annotation.models.Job` of kind :data:`JOB_KIND` and queues
   ``annotation.tasks.import_upload``.
3. :func:`run_upload` (the task) copies the files into a temporary folder on the worker, unpacks zips
   within the same limits (bytes counted while writing, whatever the zip's headers claim), finds the
   layout's folder inside, and calls the function the ``import_*`` command calls
   (:data:`annotation.services.dataset_imports.LAYOUTS`): the same readers check the files, the same
   all-or-nothing transaction writes them. A malformed file fails the job with the importer's message,
   its paths relative to the upload (no server path is shown), and nothing is imported. The stored
   files are deleted once the job ends, done or failed.
"""

from __future__ import annotations

import logging
import re
import secrets
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.core.files.storage import default_storage

from annotation.importers.errors import ImportDataError
from annotation.models import Corpus, Job
from annotation.services.dataset_imports import LAYOUTS, describe
from config.storage import cache_dir

logger = logging.getLogger(__name__)

JOB_KIND = "import_upload"
MAX_FILES = 100
"""Files one upload may hold (Django's own ``DATA_UPLOAD_MAX_NUMBER_FILES`` is 100 too)."""
MAX_ZIP_ENTRIES = 5000
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
"""What the zips of one upload may unpack to, in all (SyllabusQA's release, PDFs included, is 26 MB)."""
DOCUMENT_SUFFIXES = (".txt", ".md", ".text", ".pdf")
SUFFIXES: dict[str, tuple[str, ...]] = {
    "documents": (*DOCUMENT_SUFFIXES, ".zip"),
    "syllabusqa": (".zip",),
    "sciq": (".json", ".zip"),
    "arc": (".jsonl", ".zip"),
}
"""The file types each layout takes; a zip holds the dataset's folder as its authors release it."""
STAGES: dict[str, str] = {
    "unpacking": "Unpacking the files",
    "reading": "Reading and checking the files",
    "files": "Reading the documents",
    "syllabi": "Reading the syllabi",
    "questions": "Writing the questions",
    "qa_pairs": "Writing the QA pairs",
}
"""The importers' progress stages in the words the job's page uses."""
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._ ()+-]")


class UploadError(ValueError):
    """An upload refused before anything was stored; the message says what to change."""


class UploadRefused(RuntimeError):
    """The importer refused the uploaded files (the job's error; nothing was imported)."""


@dataclass(frozen=True)
class UploadRequest:
    """What the researcher chose: a layout, a corpus and whether it is new, and the documents' option."""

    layout: str
    corpus: str
    new: bool
    min_paragraph_chars: int = 40


def _suffix(name: str) -> str:
    return PurePosixPath(name.lower()).suffix


def _zip_members(handle: IO[bytes], name: str) -> list[zipfile.ZipInfo]:
    """The file entries of a zip to unpack (folders, links and ``__MACOSX``/dot files left out).

    Raises:
        UploadError: the zip cannot be listed, is encrypted, or has an unsafe name, too many entries or
            too many bytes.
    """
    try:
        archive = zipfile.ZipFile(handle)
        infos = archive.infolist()
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, OSError, NotImplementedError) as exc:
        raise UploadError(f"{name} cannot be read as a zip file ({exc}).") from exc
    if len(infos) > MAX_ZIP_ENTRIES:
        raise UploadError(f"{name} holds {len(infos):,} entries; at most {MAX_ZIP_ENTRIES:,} are unpacked.")
    members: list[zipfile.ZipInfo] = []
    for info in infos:
        path = PurePosixPath(info.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or re.match(r"^[A-Za-z]:", info.filename):
            raise UploadError(f"{name} holds {info.filename!r}, a path outside the zip's folder.")
        if info.flag_bits & 0x1:
            raise UploadError(f"{name} is password-protected; upload an unprotected zip.")
        kind = stat.S_IFMT(info.external_attr >> 16)
        hidden = any(part.startswith(".") or part == "__MACOSX" for part in path.parts)
        if info.is_dir() or kind == stat.S_IFLNK or hidden:
            continue
        members.append(info)
    if sum(info.file_size for info in members) > MAX_UNPACKED_BYTES:
        raise UploadError(f"{name} unpacks to more than {MAX_UNPACKED_BYTES // 2**20:,} MB.")
    return members


def check_upload(request: UploadRequest, files: Sequence[Any]) -> None:
    """Refuse an upload that cannot be the chosen layout's files (see the module docstring).

    Args:
        files: the uploaded files (Django ``UploadedFile``; ``name``, ``size`` and a readable body).

    Raises:
        UploadError: with the message to show beside the form.
    """
    layout = LAYOUTS.get(request.layout)
    if layout is None:
        raise UploadError("Choose what the files hold.")
    existing = Corpus.objects.filter(name=request.corpus).first()
    if request.new and existing is not None:
        raise UploadError(
            f"A corpus named {request.corpus!r} exists already: choose another name, or add to it."
        )
    if not request.new and existing is None:
        raise UploadError(f"There is no corpus named {request.corpus!r}: choose one of the list.")
    if existing is not None and request.layout != "documents" and existing.kind != layout.kind:
        raise UploadError(
            f"{layout.label} fills a corpus of {Corpus.Kind(layout.kind).label.lower()}; {existing.name!r} "
            f"holds {existing.get_kind_display().lower()}. Create a new corpus for these files."
        )
    if not files:
        raise UploadError("Choose at least one file.")
    if len(files) > MAX_FILES:
        raise UploadError(
            f"{len(files)} files: at most {MAX_FILES} may be uploaded at once (or upload a zip)."
        )
    allowed = SUFFIXES[request.layout]
    seen: set[str] = set()
    for upload in files:
        name = safe_name(upload.name)
        if _suffix(name) not in allowed:
            raise UploadError(
                f"{name}: {layout.label} is uploaded as {', '.join(allowed)} file(s), "
                f"not {_suffix(name) or 'a file without a type'}."
            )
        if name in seen:
            raise UploadError(f"Two files are named {name}; upload each file once.")
        seen.add(name)
        if not upload.size:
            raise UploadError(f"{name} is empty.")
        if _suffix(name) == ".zip":
            upload.seek(0)
            _zip_members(upload, name)
            upload.seek(0)


def safe_name(name: str) -> str:
    """A file name kept to letters, digits and ``._ ()+-`` (the importers match names like ``train.json``)."""
    base = PurePosixPath(str(name).replace("\\", "/")).name
    cleaned = _SAFE_NAME.sub("_", base).strip(" .") or "file"
    return cleaned[-120:]


def start_upload(request: UploadRequest, files: Sequence[Any], user: Any = None) -> Job:
    """Check and store the files, record the job and queue it (or run it, when tasks run eagerly).

    Raises:
        UploadError: see :func:`check_upload` (nothing is stored then).
    """
    check_upload(request, files)
    token = secrets.token_hex(8)
    stored: list[dict[str, Any]] = []
    for index, upload in enumerate(files):
        name = safe_name(upload.name)
        upload.seek(0)
        key = default_storage.save(f"uploads/{token}/{index:03d}-{name}", upload)
        stored.append({"name": name, "key": key, "size": int(upload.size or 0)})
    job = Job.objects.create(
        kind=JOB_KIND,
        params={
            "layout": request.layout,
            "corpus": request.corpus,
            "new": request.new,
            "min_paragraph_chars": request.min_paragraph_chars,
            "files": stored,
            "by": getattr(user, "username", "") or "",
        },
    )
    from annotation.tasks import import_upload  # the task module imports this one

    task = import_upload.delay(job.pk)
    Job.objects.filter(pk=job.pk).update(celery_task_id=task.id or "")
    job.refresh_from_db()
    logger.info("Job(%s) %s of %d file(s) into %r queued", job.pk, JOB_KIND, len(stored), request.corpus)
    return job


def _unzip(source: Path, target: Path, budget: list[int]) -> None:
    with source.open("rb") as handle:
        members = _zip_members(handle, source.name)
        archive = zipfile.ZipFile(handle)
        for info in members:
            destination = target.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as member, destination.open("wb") as sink:
                while block := member.read(1 << 20):
                    budget[0] -= len(block)
                    if budget[0] < 0:
                        raise UploadError(
                            f"{source.name} unpacks to more than {MAX_UNPACKED_BYTES // 2**20:,} MB."
                        )
                    sink.write(block)


def _place(layout: str, name: str) -> PurePosixPath:
    """Where a loose file goes in the dataset's folder (ARC's files sit in their subset's folder)."""
    if layout == "arc":
        for subset in ("ARC-Easy", "ARC-Challenge"):
            if name.startswith(f"{subset}-"):
                return PurePosixPath(subset, name)
    return PurePosixPath(name)


def _has_layout(layout: str, folder: Path) -> bool:
    if layout == "syllabusqa":
        return (folder / "data" / "dataset_split").is_dir() or (folder / "dataset_split").is_dir()
    if layout == "sciq":
        return (folder / "train.json").is_file()
    if layout == "arc":
        return (folder / "ARC-Easy").is_dir() or (folder / "ARC-Challenge").is_dir()
    return True


def find_root(layout: str, top: Path) -> Path:
    """The shallowest folder under ``top`` that looks like the layout's (a zip often wraps the dataset
    in a folder of its own); ``top`` when none does, so the importer names what is missing."""
    level = [top]
    for _depth in range(4):
        for folder in level:
            if _has_layout(layout, folder):
                return folder
        level = sorted(child for folder in level for child in folder.iterdir() if child.is_dir())
    return top


def _shown(exc: ImportDataError, top: Path) -> str:
    """The importer's message with its path relative to the upload."""
    try:
        where = exc.path.relative_to(top).as_posix() or "the upload"
    except ValueError:
        where = exc.path.name
    if where == ".":
        where = "the upload"
    line = f" line {exc.line}" if exc.line is not None else ""
    return f"{where}{line}: {exc.problem}"


def _upload_work(job: Job) -> dict[str, Any]:
    params = job.params
    layout = LAYOUTS[params["layout"]]
    stage = {"name": ""}

    def progress(name: str, done: int, total: int) -> None:
        if name != stage["name"]:
            stage["name"] = name
            job.result = {"stage": name}
            job.save(update_fields=["result"])
        job.report(done, total)

    with tempfile.TemporaryDirectory(prefix="upload-", dir=cache_dir("uploads")) as work:
        top = Path(work) / "files"
        top.mkdir()
        files = params["files"]
        budget = [MAX_UNPACKED_BYTES]
        try:
            for index, item in enumerate(files):
                progress("unpacking", index, len(files))
                local = Path(work) / f"{index:03d}.upload"
                with default_storage.open(item["key"], "rb") as source, local.open("wb") as sink:
                    while block := source.read(1 << 20):
                        sink.write(block)
                if _suffix(item["name"]) == ".zip":
                    _unzip(local, top, budget)
                else:
                    destination = top.joinpath(*_place(layout.key, item["name"]).parts)
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    local.replace(destination)
                local.unlink(missing_ok=True)
            progress("unpacking", len(files), len(files))
        except UploadError as exc:
            raise UploadRefused(str(exc)) from exc
        root = find_root(layout.key, top)
        options: dict[str, Any] = {}
        if layout.key == "documents":
            options["min_paragraph_chars"] = int(params.get("min_paragraph_chars") or 40)
        try:
            summary = layout.run(root, params["corpus"], progress=progress, **options).as_dict()
        except ImportDataError as exc:
            raise UploadRefused(_shown(exc, top)) from exc
    return {"summary": summary, "line": describe(layout.key, summary), "corpus": params["corpus"]}


def delete_stored(job: Job) -> None:
    """Remove the job's uploaded files from the storage (they are in the corpus now, or refused)."""
    for item in job.params.get("files") or []:
        try:
            default_storage.delete(item["key"])
        except OSError:  # already gone, or the storage is briefly unreachable: it is only a copy
            logger.warning("Job(%s): could not delete the upload %s", job.pk, item.get("key"))


def run_upload(job_id: int) -> Job:
    """Run an upload job; it ends done (``result``: the import's summary and sentence) or failed
    (``error``: the importer's refusal, ``result["refused"]`` true, or an unexpected error)."""
    job = Job.objects.get(pk=job_id, kind=JOB_KIND)
    if job.status == Job.Status.DONE:
        return job
    try:
        job.run(_upload_work)
    except UploadRefused as exc:
        job.error = str(exc)
        job.result = {"refused": True}
        job.save(update_fields=["error", "result"])
        logger.warning("Job(%s) %s refused: %s", job.pk, JOB_KIND, exc)
    except Exception:  # stored on the job by Job.run
        logger.exception("Job(%s) %s failed", job.pk, JOB_KIND)
    finally:
        delete_stored(job)
    return job
