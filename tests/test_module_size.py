"""No Python module of the project is over ``LIMIT`` lines (issue 25): a long module is split by what
its parts do, so the next engineer finds a change's place from the file names.

Every ``.py`` file under the repository counts (apps, config, benchmarks, scripts, tests and migrations),
with no exceptions. Folders that hold other people's code or build output are skipped: any hidden folder
(``.venv``, ``.git``: CI builds its virtualenv inside the checkout), ``site-packages``, ``node_modules``,
``__pycache__``, ``var`` (runtime files) and ``site`` (the built docs).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 600
SKIPPED = frozenset({"site-packages", "node_modules", "__pycache__", "var", "site"})


def modules(root: Path) -> Iterator[Path]:
    """The project's Python files under ``root``, without the skipped folders."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED)
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder) / name


def oversized(root: Path, limit: int = LIMIT) -> dict[str, int]:
    """Relative path -> line count of each module over ``limit`` lines."""
    found = {}
    for path in modules(root):
        with path.open("rb") as handle:
            lines = sum(1 for _ in handle)
        if lines > limit:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_module_is_over_the_limit() -> None:
    assert oversized(REPO) == {}, f"split these modules (over {LIMIT} lines) by what their parts do"


def test_the_walk_reads_the_project_and_skips_what_is_not_ours(tmp_path: Path) -> None:
    long = "x = 1\n" * (LIMIT + 1)
    for place in ("app/big.py", "app/sub/big.py", "benchmarks/big.py"):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text(long)
    for place in (
        ".venv/lib/python3.11/site-packages/pkg/big.py",
        "venv/lib/python3.11/site-packages/pkg/big.py",
        "node_modules/x/big.py",
        ".git/hooks/big.py",
        "app/__pycache__/big.py",
    ):
        (tmp_path / place).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / place).write_text(long)
    (tmp_path / "app/fits.py").write_text("x = 1\n" * LIMIT)
    (tmp_path / "app/notes.txt").write_text(long)

    assert oversized(tmp_path) == {"app/big.py": 601, "app/sub/big.py": 601, "benchmarks/big.py": 601}


def test_the_walk_finds_this_repositorys_modules() -> None:
    found = {p.relative_to(REPO).as_posix() for p in modules(REPO)}
    assert {"tests/test_module_size.py", "crowd/services/publishing.py", "config/settings.py"} <= found
    assert not any(".venv" in p or "site-packages" in p for p in found)
