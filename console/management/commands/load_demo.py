"""``manage.py load_demo``: load the demo corpora shipped in ``demo/`` (idempotent)."""

from __future__ import annotations

from typing import Any

from config.commands import JsonCommand
from console.demo import load_demo, load_demo_batches


class Command(JsonCommand):
    help = (
        "Load the demo syllabus (with a generated PDF) and demo textbook paragraphs, and open one local "
        "batch each for syllabus QA and SciQ question writing; safe to run again."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        summary = load_demo()
        summary["work"] = load_demo_batches()
        ids = {kind: b.get("id") for kind, b in summary["work"]["batches"].items()}
        self.emit(
            summary,
            [
                "Demo corpora 'demo-syllabi' and 'demo-textbook' are ready.",
                f"Local batches open for workers: {ids} "
                "(invite_workers --batch ID --count 1 prints a login link).",
            ],
        )
