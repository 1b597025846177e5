"""``manage.py import_corpus NAME PATH...``: plain text and PDF documents into a corpus of paragraphs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.importers.errors import ImportDataError
from annotation.services.dataset_imports import describe
from annotation.services.importing import import_documents
from config.commands import JsonCommand


class Command(JsonCommand):
    help = "Import .txt, .md and .pdf files (or folders of them) into corpus NAME, one passage per paragraph."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", help="Corpus name (created when missing).")
        parser.add_argument("paths", nargs="+", type=Path, help="Files or folders to import.")
        parser.add_argument(
            "--min-paragraph-chars",
            type=int,
            default=40,
            help="Blocks shorter than this (headings, page numbers) do not become passages (default 40).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            summary = import_documents(
                options["name"], options["paths"], options["min_paragraph_chars"], progress=self.progress
            ).as_dict()
        except ImportDataError as exc:
            self.close_bars()
            raise CommandError(f"{exc} (nothing was imported)") from exc
        self.emit(summary, [describe("documents", summary)])
