"""Shared plumbing of crowdqa's management commands: progress bars and the final JSON line.

Every long command shows progress on stderr and prints a summary whose last line on stdout is one JSON
object (docs/reference/commands.md), so scripts can read it with ``tail -n 1``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand
from tqdm import tqdm


class JsonCommand(BaseCommand):
    """A command that ends with one JSON object on stdout."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bars: dict[str, tqdm] = {}

    def progress(self, stage: str, done: int, total: int | None) -> None:
        """Advance (or open) the progress bar of a stage; hidden when stderr is not a terminal."""
        bar = self._bars.get(stage)
        if bar is None:
            bar = tqdm(total=total, desc=stage, file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)
            self._bars[stage] = bar
        bar.update(done - bar.n)

    def close_bars(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()

    def emit(self, summary: dict[str, Any], lines: list[str] | None = None) -> None:
        """Print human-readable lines, then the JSON summary as the last line."""
        self.close_bars()
        for line in lines or []:
            self.stdout.write(line)
        self.stdout.write(json.dumps(summary, sort_keys=True, default=str))
