"""Where the real datasets live (``../shared/data`` beside the repository by default).

The datasets have different licences, so they are read in place at run time and never copied into the
repository. ``CROWDQA_SHARED_DATA`` points elsewhere. This module does not import Django so that pure
modules, tests and benchmarks can use it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """Return the configured shared data directory (it may not exist)."""
    env = os.environ.get("CROWDQA_SHARED_DATA")
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data").resolve()


def dataset_dir(name: str) -> Optional[Path]:
    """Return ``<shared data>/<name>`` when it exists, else ``None``.

    Args:
        name: dataset folder name, e.g. ``syllabusqa``, ``sciq``, ``arc``, ``evouna``, ``semeval2013_sra``.
    """
    path = shared_data_dir() / name
    return path if path.is_dir() else None


def require_shared_data() -> bool:
    """True when a missing dataset must fail, not skip (CI sets ``CROWDQA_REQUIRE_SHARED_DATA=1``)."""
    return os.environ.get("CROWDQA_REQUIRE_SHARED_DATA", "") not in ("", "0", "false", "False")
