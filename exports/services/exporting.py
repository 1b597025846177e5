"""Exporting a release: one service behind ``export_release``, its Celery job and the New release page.

:func:`validate_request` checks a request before anything is queued (names, source, ratios, formats, a
free name and version). :func:`start_export` records it as a :class:`~annotation.models.Job` and runs it
in-process or queues :func:`exports.tasks.export_release`. :func:`run_export` is what both call: it
selects the pairs, builds the records, splits them, refuses (before writing anything) a split with the
problems of :mod:`exports.checks` that the request does not allow, writes the release
(:func:`exports.release.build_release`), registers it in the catalogue and, when the request names an
``s3://bucket/prefix`` or a Hub repository ``hf://OWNER/NAME``, publishes it there
(:func:`exports.storage.publish_release`, :func:`exports.hub.publish_to_hub`) and records the URL on the
catalogue row.

Jobs never stay RUNNING on an error: every exception marks the job failed with its message; a refusal
also stores the problems in ``job.result["refused"]`` so the page can ask "export anyway?". A job is safe
to run again: a done job is left as it is, and a job whose release was written by an earlier attempt
(crash before registering) registers that directory instead of writing it twice. A request to publish
that is otherwise the same as an earlier export which wrote this release (the same options, allowed
problems aside) publishes that release instead of being refused as taken: this is how a release is
published after it was built, or again after a failed upload (publishing skips identical objects).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Optional

from annotation.models import Batch, Corpus, Job
from exports.agreement_sources import card_agreement
from exports.checks import PROBLEM_CODES, SplitProblem, refused, split_problems
from exports.models import Release
from exports.privacy import PrivacyError
from exports.services.export_resume import built_earlier, stored_earlier, written_earlier

# The release builder, its formats and the dataset step load pyarrow, numpy and matplotlib; the New
# release page imports this module in every web worker, so they are imported where an export runs.
from exports.splits import (
    DEFAULT_RATIOS,
    SCIQ_TEST_SIZE,
    SCIQ_VAL_SIZE,
    SplitAssignment,
    SplitError,
    normalize_ratios,
)

logger = logging.getLogger(__name__)

JOB_KIND = "export_release"
STEPS = 4
"""Progress steps of an export job: select pairs, build records, write the release, register it; a
request to publish has a fifth, the upload."""


class ExportRequestError(ValueError):
    """A request that cannot be exported; ``field`` names the form field (or command option) at fault."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


class ExportRefused(RuntimeError):
    """The split has problems the request does not allow; nothing was written."""

    def __init__(self, problems: Sequence[SplitProblem]) -> None:
        self.problems = list(problems)
        super().__init__(
            "release refused: "
            + "; ".join(f"{p.message} [{p.code}]" for p in self.problems)
            + " (allow with "
            + ", ".join(sorted({"--allow-" + p.code.replace("_", "-") for p in self.problems}))
            + ")"
        )


@dataclass(frozen=True)
class ExportRequest:
    """Everything an export needs; stored as the job's params (JSON).

    Attributes:
        name: dataset name (letters, digits, ``.``, ``_``, ``-``).
        version: release version, same characters.
        out_dir: the folder the release directory ``<name>-<version>`` is written into; empty: the
            ``CROWDQA_RELEASES_DIR`` of the host that runs the job (the New release page leaves it
            empty, so a worker on another host never writes into the web host's path).
        corpus: export this corpus's pairs (rejected ones left out); or
        batches: export the approved pairs of these batches.
        ratios: train/val/test shares (group mode).
        sciq_mode: fixed-size val/test (1,000 each), the rest in train.
        use_original_splits: keep each item in the split of its source release.
        seed: split and option-shuffle seed.
        formats: any of ``csv``, ``jsonl``, ``parquet``.
        privacy_allow: reviewed values the privacy check lets through.
        allow: problem codes (:data:`exports.checks.PROBLEM_CODES`) to export despite.
        sciq_sizes: (val, test) sizes in SciQ mode.
        publish: ``s3://bucket/prefix`` to publish the release to (under ``<name>-<version>/``),
            ``hf://OWNER/NAME`` for a Hugging Face Hub dataset repository (the version as a tag), or empty.
        aggregation: how a SciQ question's repeated stage-2 validations decide whether it is released
            (``majority``, ``dawid_skene`` or ``mace``; ``none`` keeps every validated question).
    """

    name: str
    version: str
    out_dir: str = ""
    corpus: Optional[str] = None
    batches: tuple[int, ...] = ()
    ratios: tuple[float, float, float] = DEFAULT_RATIOS
    sciq_mode: bool = False
    use_original_splits: bool = False
    seed: int = 0
    formats: tuple[str, ...] = ("csv", "jsonl", "parquet")  # exports.factories.FORMATS
    privacy_allow: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    sciq_sizes: tuple[int, int] = field(default=(SCIQ_VAL_SIZE, SCIQ_TEST_SIZE))
    publish: str = ""
    aggregation: str = "dawid_skene"  # crowd.aggregation.DEFAULT_METHOD

    @property
    def destination(self) -> Path:
        """The release directory this request writes."""
        return self.folder / f"{self.name}-{self.version}"

    @property
    def folder(self) -> Path:
        """The folder the release directory is written into (see ``out_dir``)."""
        from django.conf import settings

        return Path(self.out_dir or settings.CROWDQA_RELEASES_DIR)

    def to_params(self) -> dict[str, Any]:
        """JSON-safe form for ``Job.params``."""
        data = asdict(self)
        return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ExportRequest:
        """Rebuild a request from ``Job.params``."""
        known = {key: value for key, value in params.items() if key in cls.__dataclass_fields__}
        for key in ("batches", "ratios", "formats", "privacy_allow", "allow", "sciq_sizes"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)

    @property
    def steps(self) -> int:
        """Progress steps of this request's job."""
        return STEPS + 1 if self.publish else STEPS

    def same_release(self, other: ExportRequest) -> bool:
        """True when both requests build the same release (where it is published and which split
        problems were allowed aside)."""
        return replace(self, publish="", allow=()) == replace(other, publish="", allow=())


def validate_request(request: ExportRequest, *, resuming: bool = False) -> None:
    """Check a request before it is queued.

    Args:
        request: the request.
        resuming: a retry of a job that may have written the release already (then its own
            directory and catalogue row do not count as taken; so is a request to publish a release an
            earlier job of the same request wrote).

    Raises:
        ExportRequestError: naming the field: an unsafe name or version, a name and version taken, no
            source or an unknown one, bad ratios, an unknown format or problem code, an existing
            destination, a publish URL that is not ``s3://bucket[/prefix]``.
    """
    _check_publish(request)
    resuming = resuming or built_earlier(request) is not None
    _check_name(request, resuming)
    _check_source(request)
    _check_settings(request)
    if request.destination.exists() and not resuming:
        raise ExportRequestError(
            "version", f"{request.destination} exists already; releases are immutable, choose a new version"
        )


def _check_publish(request: ExportRequest) -> None:
    """A publish URL must be ``s3://bucket[/prefix]`` or a Hugging Face Hub dataset."""
    from exports.hub import HubPublishError, is_hub_url, parse_hub_url
    from exports.storage import PublishError, parse_s3_url

    if request.publish:
        try:
            if is_hub_url(request.publish):
                parse_hub_url(request.publish)
            else:
                parse_s3_url(request.publish)
        except PublishError as exc:
            raise ExportRequestError("publish", str(exc)) from exc
        except HubPublishError as exc:
            raise ExportRequestError("publish", str(exc)) from exc


def _check_name(request: ExportRequest, resuming: bool) -> None:
    """A safe name and version that no other release holds (a resumed job's own release aside)."""
    from exports.release import safe_release_name
    from exports.release_store import stored_url
    from exports.services.releases import registered_as

    for label, value in (("name", request.name), ("version", request.version)):
        if not value or not safe_release_name(value):
            raise ExportRequestError(
                label, f"release {label} {value!r}: use letters, digits, '.', '_' and '-' only"
            )
    taken = registered_as(request.name, request.version)
    own_paths = (str(request.destination.resolve()), stored_url(request.destination))
    if taken is not None and not (resuming and taken.path in own_paths):
        raise ExportRequestError(
            "version",
            f"release {taken} is registered already as Release({taken.pk}) at {taken.path}; "
            "releases are immutable, choose a new version",
        )


def _check_source(request: ExportRequest) -> None:
    """A corpus or batches (not both), each of which exists."""
    if bool(request.corpus) == bool(request.batches):
        raise ExportRequestError("source", "choose a corpus or one or more batches (not both)")
    if request.corpus and not Corpus.objects.filter(name=request.corpus).exists():
        raise ExportRequestError("corpus", f"no corpus named '{request.corpus}'")
    if request.batches:
        found = set(Batch.objects.filter(pk__in=request.batches).values_list("pk", flat=True))
        missing = [b for b in request.batches if b not in found]
        if missing:
            raise ExportRequestError("batches", f"no batch with id {', '.join(map(str, missing))}")


def _check_settings(request: ExportRequest) -> None:
    """Split ratios, formats, the aggregation method and the allowed problem codes are known."""
    from crowd.aggregation_terms import METHODS
    from exports.factories import UnknownFormatError, parse_formats
    from exports.verdicts import NO_AGGREGATION

    if not request.sciq_mode:
        try:
            normalize_ratios(request.ratios)
        except SplitError as exc:
            raise ExportRequestError("ratios", str(exc)) from exc
    try:
        parse_formats(request.formats)
    except UnknownFormatError as exc:
        raise ExportRequestError("formats", str(exc)) from exc
    if request.aggregation not in (*METHODS, NO_AGGREGATION):
        raise ExportRequestError(
            "aggregation",
            f"unknown aggregation {request.aggregation!r}; choose {', '.join((*METHODS, NO_AGGREGATION))}",
        )
    unknown = sorted(set(request.allow) - set(PROBLEM_CODES))
    if unknown:
        raise ExportRequestError("allow", f"unknown problem code(s) {unknown}; choose from {PROBLEM_CODES}")


def start_export(request: ExportRequest, *, sync: bool = False) -> Job:
    """Validate a request, record it as a job and run it here (``sync``) or on a ``default`` worker.

    Raises:
        ExportRequestError: see :func:`validate_request` (no job is created).
    """
    validate_request(request)
    earlier = built_earlier(request)
    job = Job.objects.create(
        kind=JOB_KIND,
        params=request.to_params(),
        progress_total=request.steps,
        # the release is there: the job registers and publishes it (see _export_work)
        result={
            key: earlier.result[key] for key in ("written", "warnings", "release_id") if key in earlier.result
        }
        if earlier
        else {},
    )
    if sync:
        return run_export(job.pk)
    from exports.tasks import ExportFailed, export_release  # the task module imports this one

    try:
        task = export_release.delay(job.pk)
    except ExportFailed:  # only when tasks run eagerly: the failure is on the job, shown by its page
        job.refresh_from_db()
        return job
    job.celery_task_id = task.id or ""
    job.save(update_fields=["celery_task_id"])
    logger.info("Job(%s) %s queued as task %s", job.pk, JOB_KIND, task.id)
    return job


def _source(request: ExportRequest) -> tuple[Optional[Corpus], list[Batch]]:
    if request.corpus:
        return Corpus.objects.get(name=request.corpus), []
    batches = list(Batch.objects.filter(pk__in=request.batches).select_related("corpus").order_by("pk"))
    return None, batches


def _nothing_to_export(request: ExportRequest, aggregation: dict[str, Any]) -> ExportRequestError:
    """The refusal of an empty selection, naming why it is empty and what would change that.

    A selection can be empty because it holds no pair (nothing approved in the batches, everything
    rejected in the corpus) or because every question it holds was left out by its stage-2
    validators' aggregated verdict; the second is a choice the researcher can revisit, so it is named
    on the ``aggregation`` field with the option that keeps the questions.
    """
    left_out = aggregation.get("left_out") or 0
    if left_out:
        questions = f"{left_out} question{'s' if left_out != 1 else ''}"
        return ExportRequestError(
            "aggregation",
            f"nothing to export: the selection's {questions} "
            f"{'were' if left_out != 1 else 'was'} left out because the stage-2 validators' "
            f"aggregated verdict ({request.aggregation}) rejects {'them' if left_out != 1 else 'it'} "
            "(a validator raised a flag such as too_specific or false_answer). To release "
            f'{"them" if left_out != 1 else "it"} anyway, choose "Keep every validated question" '
            "under Stage-2 validation (export_release --aggregation none).",
        )
    if request.batches:
        return ExportRequestError(
            "batches",
            "nothing to export: the chosen batches have no approved QA pair; approve their work on the "
            "review page first",
        )
    return ExportRequestError("corpus", "nothing to export: the corpus has no QA pair that is not rejected")


def _records(request: ExportRequest) -> tuple[Any, Any, Optional[Corpus], list[Batch], dict[str, Any]]:
    """(pairs, records, corpus, batches, aggregation facts) of a request: the selection (questions the
    aggregated stage-2 verdict rejects left out) and its records, read in chunks."""
    from exports.dataset import PairRecords, pairs_for
    from exports.verdicts import aggregated_validations

    corpus, batches = _source(request)
    selected = pairs_for(corpus=corpus, batches=batches)
    pairs, aggregation = aggregated_validations(selected, request.aggregation)
    if not pairs.exists():
        raise _nothing_to_export(request, aggregation)
    records = PairRecords(pairs, source_order=request.use_original_splits)
    return pairs, records, corpus or (batches[0].corpus if batches else None), batches, aggregation


def check_request(request: ExportRequest) -> list[SplitProblem]:
    """The split problems a request would meet, without writing anything (the command's early check).

    Raises:
        ExportRequestError: nothing to export.
        ValueError: syllabus and multiple-choice pairs mixed, bad ratios or a conflicting split.
    """
    from exports.dataset import original_assignment
    from exports.release import split_records

    pairs, records, _, _, _ = _records(request)
    assignment = split_records(
        records,
        ratios=request.ratios,
        seed=request.seed,
        sciq_mode=request.sciq_mode,
        sciq_sizes=request.sciq_sizes,
        previous=original_assignment(pairs) if request.use_original_splits else None,
    )
    return split_problems(records, assignment, original_splits=request.use_original_splits)


def _publish(job: Job, request: ExportRequest, path: Path, release: Release) -> dict[str, Any]:
    """Publish the release (step 5) and record where on its catalogue row."""
    from exports.hub import HubPublishError, hub_api, is_hub_url, parse_hub_url, publish_to_hub
    from exports.storage import PublishError, parse_s3_url, publish_release, s3_client

    try:
        if is_hub_url(request.publish):
            published: Any = publish_to_hub(path, parse_hub_url(request.publish), hub_api())
        else:
            published = publish_release(
                path, parse_s3_url(request.publish), s3_client(), folder=request.destination.name
            )
    except (PublishError, HubPublishError) as exc:
        raise PublishError(
            f"{exc} (the release is written at {path} and registered as Release({release.pk}); "
            "export it again with the same options to publish it)"
        ) from exc
    release.published_url = published.url
    release.save(update_fields=["published_url"])
    job.report(STEPS + 1)
    return published.to_dict()


def _build(job: Job, request: ExportRequest) -> tuple[Path, list[SplitProblem]]:
    """Write the release of a request (steps 1-3); returns its directory and the allowed problems."""
    from exports.dataset import (
        card_inputs_for,
        original_assignment,
        source_documents_for,
        suggestions_of_selection,
    )
    from exports.release import build_release

    pairs, records, corpus, batches, aggregation = _records(request)
    job.report(1)
    card_inputs = replace(card_inputs_for(pairs, corpus), aggregation=aggregation)
    agreement, note = card_agreement(request.name)
    if agreement:
        card_inputs = replace(card_inputs, agreement=agreement, agreement_note=note)
    suggestions = suggestions_of_selection(pairs)
    job.report(2)
    seen: list[SplitProblem] = []

    def check(assignment: SplitAssignment) -> None:
        problems = split_problems(records, assignment, original_splits=request.use_original_splits)
        blocking = refused(problems, request.allow)
        if blocking:
            raise ExportRefused(blocking)
        seen.extend(problems)

    source = (
        f"corpus {request.corpus}"
        if request.corpus
        else ("batch " if len(batches) == 1 else "batches ") + ",".join(str(b.pk) for b in batches)
    )
    result = build_release(
        records,
        name=request.name,
        version=request.version,
        out_dir=request.folder,
        formats=request.formats,
        ratios=request.ratios,
        seed=request.seed,
        sciq_mode=request.sciq_mode,
        sciq_sizes=request.sciq_sizes,
        previous_assignment=original_assignment(pairs) if request.use_original_splits else None,
        card_inputs=card_inputs,
        source_batches=[b.pk for b in batches],
        privacy_allow=request.privacy_allow,
        suggestions=suggestions,
        source=source,
        check_split=check,
        keep_order=request.use_original_splits,
        source_documents=source_documents_for(pairs),
    )
    return result.path, seen


def _export_work(job: Job) -> dict[str, Any]:
    """The body of an export job (run by :meth:`annotation.models.Job.run`); returns the job's result."""
    from exports.release_files import ReleaseError, read_manifest
    from exports.release_store import release_root, store_release
    from exports.services.releases import register_release

    request = ExportRequest.from_params(job.params)
    path = written_earlier(job, request)
    stored = stored_earlier(job, request) if path is None else None
    if stored is not None:
        # Built on another host: this host's copy, verified against the catalogue's manifest digest and
        # every file against the manifest (ReleaseError otherwise: a changed release is never published).
        path = release_root(stored)
        logger.info(
            "Job(%s) uses Release(%s) %s built earlier, from %s", job.pk, stored.pk, stored, stored.path
        )
    warnings: list[dict[str, Any]] = list((job.result or {}).get("warnings") or [])
    if path is None:
        validate_request(request, resuming=True)
        try:
            path, problems = _build(job, request)
        except ExportRefused as exc:
            job.result = {"refused": [p.to_dict() for p in exc.problems]}
            job.save(update_fields=["result"])
            raise
        except PrivacyError as exc:
            raise ReleaseError(f"release blocked by the privacy check: {exc}") from exc
        warnings = [p.to_dict() for p in problems]
        job.result = {"written": str(path.resolve()), "warnings": warnings}
        job.save(update_fields=["result"])
    job.report(3)
    release = stored or register_release(path, stored_at=store_release(path))
    job.result = {**(job.result or {}), "release_id": release.pk}  # what stored_earlier looks for
    job.save(update_fields=["result"])
    manifest = read_manifest(path)
    split = manifest.get("split") or {}
    job.report(4)
    logger.info("Job(%s) wrote Release(%s) %s at %s", job.pk, release.pk, release, path)
    published = _publish(job, request, path, release) if request.publish else None
    return {
        "path": str(path),
        # what written_earlier and built_earlier look for (a build found in the storage keeps the
        # directory its own host wrote)
        "written": job.result.get("written") or str(path.resolve()),
        "name": release.name,
        "version": release.version,
        "release_id": release.pk,
        "counts": split.get("counts") or {},
        "achieved_ratios": split.get("achieved_ratios") or {},
        "excluded": manifest.get("excluded") or {},
        "files": len(manifest.get("files") or []),
        "warnings": warnings,
        **({"published": published} if published else {}),
    }


def run_export(job_id: int) -> Job:
    """Run an export job; the job ends done or failed, never running (see the module docstring).

    Returns:
        The job, done (``result``: the release summary with ``release_id`` and ``warnings``, the allowed
        problems) or failed (``error``; ``result["refused"]`` lists the problems of a refusal).
    """
    job = Job.objects.get(pk=job_id)
    if job.status == Job.Status.DONE:
        logger.info("Job(%s) is done already; not exported again", job.pk)
        return job
    try:
        job.run(_export_work, total=ExportRequest.from_params(job.params).steps)
    except ExportRefused as exc:
        logger.warning("Job(%s) %s", job.pk, exc)
    except Exception:  # stored on the job by Job.run
        logger.exception("Job(%s) %s failed", job.pk, JOB_KIND)
    else:
        _announce(job)
    return job


def _announce(job: Job) -> None:
    """``release.built`` for the release a done job registered (once per release)."""
    from webhooks.events import emit
    from webhooks.models import EventType

    release = Release.objects.filter(pk=(job.result or {}).get("release_id")).first()
    if release is None:
        return
    data = {
        "release": {
            "id": release.pk,
            "name": release.name,
            "version": release.version,
            "kind": release.kind,
            "counts": release.counts,
            "manifest_sha256": release.manifest_sha256,
            "published_url": release.published_url,
        },
        "job": job.pk,
    }
    emit(EventType.RELEASE_BUILT, f"release.built:{release.pk}", data)
