"""``manage.py filter_sentences [--input FILE] --json``: the SciQ sentence filter, one sentence per line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from filters.sentence_filter import filter_sentences
from filters.sentence_rules import FilterOptions


class Command(BaseCommand):
    help = (
        "Judge sentences with the rule-based filter (SciQ rules i-xv). Reads one sentence per line from "
        '--input or standard input and prints one JSON object per line: {"text", "accepted", "rules"}.'
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--input", type=Path, help="A UTF-8 text file with one sentence per line.")
        parser.add_argument("--json", action="store_true", help="Print JSON lines (the only output format).")
        parser.add_argument("--min-tokens", type=int, default=6, help="Shorter sentences fire 'length'.")
        parser.add_argument("--max-tokens", type=int, default=18, help="Longer sentences fire 'length'.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path | None = options["input"]
        if path is not None:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError as exc:
                raise CommandError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
        else:
            lines = sys.stdin.read().splitlines()
        try:
            filter_options = FilterOptions(min_tokens=options["min_tokens"], max_tokens=options["max_tokens"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        sentences = [line for line in lines if line.strip()]
        for verdict in filter_sentences(sentences, filter_options):
            self.stdout.write(json.dumps(verdict.to_dict(), ensure_ascii=False))
