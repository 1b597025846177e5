"""``manage.py import_arc DIR``: load ARC-Easy and ARC-Challenge (real grade-school exam MCQs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.importers.errors import ImportDataError
from annotation.services.dataset_imports import describe, import_arc_dir
from config.commands import JsonCommand


class Command(JsonCommand):
    help = "Import ARC JSONL (DIR/ARC-Easy/*.jsonl and DIR/ARC-Challenge/*.jsonl): questions and distractors."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", type=Path, help="Folder holding ARC-Easy/ and ARC-Challenge/.")
        parser.add_argument("--corpus", default="arc", help="Corpus name (default: arc).")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["dir"]
        if not root.is_dir():
            raise CommandError(f"{root}: no such folder")
        try:
            summary = import_arc_dir(root, options["corpus"], progress=self.progress).as_dict()
        except ImportDataError as exc:
            self.close_bars()
            raise CommandError(f"{exc} (nothing was imported)") from exc
        self.emit(summary, [describe("arc", summary)])
