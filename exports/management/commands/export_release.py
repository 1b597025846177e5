"""``manage.py export_release``: build a versioned, immutable dataset release directory and register it.

The last output line is the JSON summary of :meth:`exports.release.ReleaseResult.to_dict` plus
``release_id``, the catalogue row (:func:`exports.services.releases.register_release`) that pages and
benchmark runs refer to.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.management.commands._base import JsonCommand
from annotation.models import Batch, Corpus
from exports.dataset import (
    agreement_for,
    card_inputs_for,
    original_assignment,
    pairs_for,
    records_for,
    suggestions_for,
)
from exports.factories import UnknownFormatError
from exports.privacy import AllowFileError, PrivacyError, read_allow_file
from exports.release import ReleaseError, build_release
from exports.services.releases import register_release, registered_as
from exports.splits import SplitError


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
        # DESIGN.md names the release version --version, which Django reserves for its own version
        # flag; "resolve" lets this command's option replace Django's.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--name", required=True, help="Dataset name (letters, digits, . _ -).")
        parser.add_argument("--version", required=True, help="Release version, e.g. 1.0.0.")
        parser.add_argument("--out", required=True, type=Path, help="Folder to write <name>-<version>/ into.")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--corpus", help="Export this corpus's QA pairs (rejected pairs left out).")
        source.add_argument("--batch", type=int, help="Export the approved QA pairs of this batch.")
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

    def handle(self, *args: Any, **options: Any) -> None:
        allow = list(options["privacy_allow"])
        if options["privacy_allow_file"]:
            try:
                allow += read_allow_file(options["privacy_allow_file"])
            except AllowFileError as exc:
                raise CommandError(f"--privacy-allow-file: {exc}") from exc
        taken = registered_as(options["name"], options["version"])
        if taken is not None:
            raise CommandError(
                f"release {taken} is registered already as Release({taken.pk}) at {taken.path}; "
                "releases are immutable, choose a new --version"
            )
        corpus = batch = None
        if options["corpus"]:
            corpus = Corpus.objects.filter(name=options["corpus"]).first()
            if corpus is None:
                raise CommandError(f"no corpus named '{options['corpus']}'")
        else:
            batch = Batch.objects.filter(pk=options["batch"]).select_related("corpus").first()
            if batch is None:
                raise CommandError(f"no batch with id {options['batch']}")
            corpus = batch.corpus
        pairs = list(pairs_for(corpus=None if batch else corpus, batch=batch))
        if not pairs:
            raise CommandError("nothing to export: the selection has no QA pair that is not rejected")
        card_inputs = card_inputs_for(pairs, corpus)
        agreement, note = agreement_for(options["name"])
        if agreement:
            card_inputs = replace(card_inputs, agreement=agreement, agreement_note=note)
        try:
            records = records_for(pairs)
            result = build_release(
                records,
                name=options["name"],
                version=options["version"],
                out_dir=options["out"],
                formats=options["formats"],
                ratios=_ratios(options["ratios"]),
                seed=options["seed"],
                sciq_mode=options["sciq_mode"],
                previous_assignment=original_assignment(pairs) if options["use_original_splits"] else None,
                card_inputs=card_inputs,
                source_batches=[batch.pk] if batch else [],
                privacy_allow=allow,
                suggestions=suggestions_for(pairs),
                source=f"batch {batch.pk}" if batch else f"corpus {corpus.name}",
            )
            release = register_release(result.path)
        except PrivacyError as exc:
            raise CommandError(f"release blocked by the privacy check: {exc}") from exc
        except (ReleaseError, SplitError, UnknownFormatError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        summary = {**result.to_dict(), "release_id": release.pk}
        self.emit(
            summary,
            [f"Release written to {result.path}: " + ", ".join(f"{k} {v}" for k, v in result.counts.items())],
        )
