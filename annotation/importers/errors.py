"""The one error type importers raise: it names the file, the row and the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Union


class ImportDataError(Exception):
    """Malformed input. The message reads ``train.csv line 42: unknown question type 'foo'``."""

    def __init__(self, path: Union[str, Path], problem: str, line: Optional[int] = None) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = f"{self.path.name} line {line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {problem}")
