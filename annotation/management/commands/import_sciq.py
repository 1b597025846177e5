"""``manage.py import_sciq DIR``: load SciQ's train/valid/test JSON (questions, passages, distractors)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from annotation.importers.errors import ImportDataError
from annotation.services.dataset_imports import describe, import_sciq_dir
from config.commands import JsonCommand


class Command(JsonCommand):
    help = "Import SciQ ({train,valid,test}.json) from DIR: questions, support passages and distractors."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("dir", type=Path, help="Folder holding train.json, valid.json and test.json.")
        parser.add_argument("--corpus", default="sciq", help="Corpus name (default: sciq).")

    def handle(self, *args: Any, **options: Any) -> None:
        root: Path = options["dir"]
        if not root.is_dir():
            raise CommandError(f"{root}: no such folder")
        try:
            summary = import_sciq_dir(root, options["corpus"], progress=self.progress).as_dict()
        except ImportDataError as exc:
            self.close_bars()
            raise CommandError(f"{exc} (nothing was imported)") from exc
        self.emit(summary, [describe("sciq", summary)])
