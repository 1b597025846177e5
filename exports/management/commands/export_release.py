"""``manage.py export_release``: build a versioned, immutable dataset release directory and register it.

The export job (:mod:`exports.services.exporting`) runs in this process, so the command's JSON gives the
path and the counts as docs/reference/commands.md promises; ``--queue`` puts it on the ``default``
queue instead (the New release page always does) and names the job. The split is checked first: an
empty split, a split with fewer items than asked, or leakage between splits stops the command with a
non-zero exit unless ``--allow-empty-split`` / ``--allow-short-split`` / ``--allow-leakage`` says
otherwise. In process, the last output line is the JSON summary (path, counts, ``release_id`` of the
catalogue row that pages and benchmark runs refer to, ``warnings``). ``--publish s3://bucket/prefix``
then uploads the release to ``prefix/<name>-<version>/`` (``published`` in the JSON: its URL and the
objects uploaded and already there); run with the same options again, it publishes the release it built
before (after a failed upload, or to publish it later).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.models import Job
from config.commands import JsonCommand
from exports.checks import PROBLEM_CODES, refused
from exports.factories import UnknownFormatError, parse_formats
from exports.privacy import AllowFileError, read_allow_file
from exports.services.exporting import (
    ExportRefused,
    ExportRequest,
    ExportRequestError,
    check_request,
    start_export,
    validate_request,
)


def _ratios(value: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(x) for x in value.split(","))
    except ValueError as exc:
        raise CommandError(f"--ratios '{value}': expected three numbers such as 0.8,0.1,0.1") from exc
    if len(parts) != 3 or abs(sum(parts) - 1.0) > 1e-6 or min(parts) < 0:
        raise CommandError(f"--ratios '{value}': expected three non-negative numbers summing to 1")
    return parts  # type: ignore[return-value]


class Command(JsonCommand):
    help = (
        "Export a corpus or a batch as a release: train/val/test files in each format, manifest.json "
        "with sha256 and row counts, and card.md. Splits never share a source document."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> Any:
        # The command contract (docs/reference/commands.md) names the release version --version, which
        # Django reserves for its own version flag; "resolve" lets this command's option replace Django's.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--name", required=True, help="Dataset name (letters, digits, . _ -).")
        parser.add_argument("--version", required=True, help="Release version, e.g. 1.0.0.")
        parser.add_argument("--out", required=True, type=Path, help="Folder to write <name>-<version>/ into.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--corpus", help="Export this corpus's QA pairs (rejected pairs left out).")
        source.add_argument(
            "--batch",
            type=int,
            action="append",
            help="Export the approved QA pairs of this batch (repeatable for several batches).",
        )
        parser.add_argument(
            "--ratios", default="0.8,0.1,0.1", help="train,val,test shares (default 0.8,0.1,0.1)."
        )
        parser.add_argument(
            "--sciq-mode",
            action="store_true",
            help="Multiple-choice release with 1,000 val and 1,000 test items, the rest in train.",
        )
        parser.add_argument(
            "--use-original-splits",
            action="store_true",
            help="Keep each item in the split of its source release.",
        )
        parser.add_argument("--seed", type=int, default=0, help="Split and option-shuffle seed (default 0).")
        parser.add_argument("--formats", default="csv,jsonl,parquet", help="Any of csv,jsonl,parquet.")
        parser.add_argument(
            "--privacy-allow",
            action="append",
            default=[],
            metavar="VALUE",
            help="A reviewed value the privacy check may let through (repeatable), e.g. a "
            "department's public office e-mail.",
        )
        parser.add_argument(
            "--privacy-allow-file",
            type=Path,
            metavar="FILE",
            help="A file of reviewed values for the privacy check, one per line ('#' comments and blank "
            "lines ignored); merged with --privacy-allow.",
        )
        for code in PROBLEM_CODES:
            parser.add_argument(
                "--allow-" + code.replace("_", "-"),
                action="store_true",
                help={
                    "empty_split": "Export even when a split asked for is empty.",
                    "short_split": "Export even when a split has fewer items than asked for.",
                    "leakage": "Export even when a document or question is in two splits.",
                }[code],
            )
        parser.add_argument(
            "--publish",
            default="",
            metavar="s3://BUCKET/PREFIX | hf://OWNER/NAME",
            help="Also upload the release to PREFIX/<name>-<version>/ in this S3 bucket (credentials "
            "from boto3's usual chain; AWS_ENDPOINT_URL_S3 for MinIO or another S3-compatible store), "
            "or to the Hugging Face Hub dataset repository OWNER/NAME with the version as a tag "
            "(HF_ENDPOINT, HF_TOKEN). Identical objects already there are skipped; differing ones are "
            "never overwritten.",
        )
        parser.add_argument(
            "--aggregation",
            choices=("majority", "dawid_skene", "mace", "none"),
            default="dawid_skene",
            help="How a SciQ question's stage-2 validations decide whether it is released: their "
            "aggregated verdict by this method (default dawid_skene); none keeps every validated question.",
        )
        run = parser.add_mutually_exclusive_group()
        run.add_argument("--sync", action="store_true", help="Run in this process (the default).")
        run.add_argument(
            "--queue", action="store_true", help="Queue the export as a job for a worker and print its id."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sync = not options["queue"]
        allow = list(options["privacy_allow"])
        if options["privacy_allow_file"]:
            try:
                allow += read_allow_file(options["privacy_allow_file"])
            except AllowFileError as exc:
                raise CommandError(f"--privacy-allow-file: {exc}") from exc
        try:
            formats = parse_formats(options["formats"])
        except UnknownFormatError as exc:
            raise CommandError(str(exc)) from exc
        request = ExportRequest(
            name=options["name"],
            version=options["version"],
            out_dir=str(Path(options["out"]).resolve()),
            corpus=options["corpus"],
            batches=tuple(options["batch"] or ()),
            ratios=_ratios(options["ratios"]),
            sciq_mode=options["sciq_mode"],
            use_original_splits=options["use_original_splits"],
            seed=options["seed"],
            formats=formats,
            privacy_allow=tuple(allow),
            allow=tuple(code for code in PROBLEM_CODES if options["allow_" + code]),
            publish=options["publish"],
            aggregation=options["aggregation"],
        )
        try:
            validate_request(request)
            if not sync:  # the job checks again; a queued refusal should not wait for a worker
                blocking = refused(check_request(request), request.allow)
                if blocking:
                    raise ExportRefused(blocking)
            job = start_export(request, sync=sync)
        except (ExportRequestError, ExportRefused, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if not sync:
            self.emit(
                {"job": job.pk, "status": job.status, "task": job.celery_task_id},
                [f"Job({job.pk}) queued; follow it at /releases/jobs/{job.pk}/."],
            )
            return
        if job.status != Job.Status.DONE:
            self.emit({"job": job.pk, "status": job.status, "error": job.error, **job.result})
            raise CommandError(job.error)
        result = {key: value for key, value in job.result.items() if key != "written"}
        lines = [
            f"Release written to {result['path']}: "
            + ", ".join(f"{k} {v}" for k, v in result["counts"].items())
        ]
        lines += [f"warning: {w['message']} [{w['code']}] (allowed)" for w in result.get("warnings") or []]
        if result.get("published"):
            published = result["published"]
            lines.append(
                f"Published to {published['url']}: {published['uploaded']} object(s) uploaded, "
                f"{published['skipped']} already there"
            )
        self.emit({**result, "job": job.pk}, lines)
