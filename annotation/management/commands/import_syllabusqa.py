"""``manage.py import_syllabusqa DIR``: load the SyllabusQA release (syllabi, PDFs, QA pairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.importers.errors import ImportDataError
from annotation.services.dataset_imports import describe, import_syllabusqa_dir
from config.commands import JsonCommand


class Command(JsonCommand):
    help = (
        "Import the SyllabusQA release from DIR (data/dataset_split/{train,val,test}.csv and "
        "syllabi/syllabi_redacted/{text,pdf}/). Idempotent: a second run changes nothing."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", type=Path, help="The release folder, e.g. ../shared/data/syllabusqa.")
        parser.add_argument("--corpus", default="syllabusqa", help="Corpus name (default: syllabusqa).")
        parser.add_argument(
            "--encoding",
            choices=["mac_roman", "utf-8"],
            default="mac_roman",
            help="Encoding of the syllabus text files: mac_roman reads text/ (the release), "
            "utf-8 reads text_utf8/.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["dir"]
        if not root.is_dir():
            raise CommandError(f"{root}: no such folder")
        try:
            summary = import_syllabusqa_dir(
                root, options["corpus"], progress=self.progress, encoding=options["encoding"]
            ).as_dict()
        except ImportDataError as exc:
            self.close_bars()
            raise CommandError(f"{exc} (nothing was imported)") from exc
        self.emit(summary, [describe("syllabusqa", summary)])
