"""``manage.py load_demo``: load the demo corpora shipped in ``demo/`` (idempotent)."""

from __future__ import annotations

from typing import Any

from annotation.management.commands._base import JsonCommand
from annotation.services.demo import load_demo


class Command(JsonCommand):
    help = "Load the demo syllabus (with a generated PDF) and demo textbook paragraphs; safe to run again."

    def handle(self, *args: Any, **options: Any) -> None:
        summary = load_demo()
        self.emit(summary, ["Demo corpora 'demo-syllabi' and 'demo-textbook' are ready."])
