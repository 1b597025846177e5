"""``manage.py suggest_distractors``: top-k distractor suggestions for one question or a JSONL file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from config.commands import JsonCommand
from distractors.model_store import current_model_dir
from distractors.ranker import load_suggester
from distractors.suggestion import suggest_many


class Command(JsonCommand):
    help = (
        "Suggest distractors with the trained ranker (or the WordNet-sibling fallback before one is "
        "trained). Either --question Q --answer A, or --input IN.jsonl --output OUT.jsonl (each line gets "
        "'suggestions')."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--question", help="The question text.")
        parser.add_argument("--answer", help="Its correct answer.")
        parser.add_argument("--input", type=Path, help="JSON lines with 'question' and 'answer'.")
        parser.add_argument("--output", type=Path, help="Where to write the JSON lines with suggestions.")
        parser.add_argument("--top", type=int, default=6, help="How many suggestions (default 6).")
        parser.add_argument(
            "--model-dir", type=Path, help="Model directory (default: the ranker this host serves)."
        )
        parser.add_argument("--json", action="store_true", help="Print JSON (the default).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["top"] < 1:
            raise CommandError("--top must be at least 1")
        single = options["question"] is not None or options["answer"] is not None
        if single == (options["input"] is not None):
            raise CommandError("give either --question and --answer, or --input and --output")
        suggester = load_suggester(options["model_dir"] or current_model_dir())
        source = type(suggester).__name__
        if single:
            if not options["question"] or not options["answer"]:
                raise CommandError("--question and --answer are both required")
            suggestions = suggester.suggest(options["question"], options["answer"], top=options["top"])
            self.emit(
                {
                    "question": options["question"],
                    "answer": options["answer"],
                    "suggester": source,
                    "suggestions": [s.to_dict() for s in suggestions],
                }
            )
            return
        if options["output"] is None:
            raise CommandError("--input needs --output")
        rows = self._read(options["input"])
        results = suggest_many(
            suggester,
            [(r["question"], r["answer"]) for r in rows],
            top=options["top"],
            progress=lambda done, total: self.progress("questions", done, total),
        )
        with options["output"].open("w", encoding="utf-8") as handle:
            for row, suggestions in zip(rows, results, strict=True):
                handle.write(
                    json.dumps({**row, "suggestions": [s.to_dict() for s in suggestions]}, ensure_ascii=False)
                    + "\n"
                )
        self.emit(
            {
                "input": str(options["input"]),
                "output": str(options["output"]),
                "questions": len(rows),
                "suggester": source,
            }
        )

    @staticmethod
    def _read(path: Path) -> list[dict]:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        rows = []
        with path.open(encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CommandError(f"{path.name} line {line_no}: not valid JSON ({exc.msg})") from exc
                if not isinstance(row, dict) or not row.get("question") or not row.get("answer"):
                    raise CommandError(f"{path.name} line {line_no}: needs non-empty 'question' and 'answer'")
                rows.append(row)
        return rows
