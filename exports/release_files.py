"""A built release read back: its file names, its errors, the manifest and index, verification, diffs.

:mod:`exports.release` builds releases; what reads one (the catalogue pages, publishing, benchmarks,
expert batches, the next release that keeps this one's assignment) needs only this module. Nothing here
imports Django.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from annotation.hashing import file_sha256
from exports.split_types import PreviousAssignment

MANIFEST = "manifest.json"
INDEX = "index.json"


class ReleaseError(RuntimeError):
    """A release cannot be built or read (exists already, bad name, missing manifest)."""


class ReleaseIntegrityError(ReleaseError):
    """A release's files do not match its manifest; ``problems`` lists each mismatch."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} integrity problem(s): " + "; ".join(problems[:5]))


def count_rows(path: Path) -> Optional[int]:
    """Data rows in a CSV (records, not lines), JSONL, JSON array or Parquet file; None for other files."""
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return max(0, sum(1 for _ in csv.reader(handle)) - 1)
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as handle:
            return sum(1 for line in handle if line.strip())
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # the catalogue pages import this module; only counting needs it

        return pq.ParquetFile(path).metadata.num_rows
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8"))
        return len(data) if isinstance(data, list) else None
    return None


def read_manifest(release: Path) -> dict[str, Any]:
    """Load ``manifest.json`` of a release.

    Raises:
        ReleaseError: no manifest, or one that is not JSON.
    """
    path = Path(release) / MANIFEST
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ReleaseError(f"{path}: not a release (no {MANIFEST})") from e
    except json.JSONDecodeError as e:
        raise ReleaseError(f"{path}: invalid JSON at line {e.lineno}: {e.msg}") from e


def verify_release(release: Path) -> dict[str, Any]:
    """Check every file against the manifest (sha256, size, rows) and look for unlisted files.

    Returns:
        ``{"files": n, "rows": total data rows}`` when everything matches.

    Raises:
        ReleaseIntegrityError: lists every missing, changed or unlisted file.
    """
    release = Path(release)
    manifest = read_manifest(release)
    problems: list[str] = []
    listed = set()
    total_rows = 0
    for entry in manifest["files"]:
        path = release / entry["path"]
        listed.add(entry["path"])
        if not path.is_file():
            problems.append(f"{entry['path']}: missing")
            continue
        actual = file_sha256(path)
        if actual != entry["sha256"]:
            problems.append(f"{entry['path']}: sha256 {actual[:12]}… != manifest {entry['sha256'][:12]}…")
            continue
        if entry.get("rows") is not None:
            rows = count_rows(path)
            if rows != entry["rows"]:
                problems.append(f"{entry['path']}: {rows} rows != manifest {entry['rows']}")
            total_rows += rows or 0
    for path in release.rglob("*"):
        relative = str(path.relative_to(release))
        if path.is_file() and relative != MANIFEST and relative not in listed:
            problems.append(f"{relative}: not in the manifest")
    if problems:
        raise ReleaseIntegrityError(release, problems)
    return {"files": len(listed), "rows": total_rows}


def load_index(release: Path) -> dict[str, Any]:
    """Load ``index.json`` (item and document assignment) of a release.

    Raises:
        ReleaseError: the release has no index.
    """
    path = Path(release) / INDEX
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ReleaseError(f"{path}: missing; cannot reuse this release's assignment") from e


def load_assignment(release: Path) -> PreviousAssignment:
    """Return an earlier release's assignment, to pass as ``previous_assignment``."""
    index = load_index(release)
    return PreviousAssignment(
        items={item_id: entry["split"] for item_id, entry in index["items"].items()},
        documents=dict(index["documents"]),
    )


@dataclass(frozen=True)
class ReleaseDiff:
    """Item-level difference between two releases.

    Attributes:
        added: ids only in the new release.
        removed: ids only in the old release.
        changed: ids in both whose content differs.
        moved: ids in both whose split differs (should stay empty: old items never move).
    """

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Counts and ids for JSON output."""
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "moved": len(self.moved),
            "ids": {
                "added": self.added,
                "removed": self.removed,
                "changed": self.changed,
                "moved": self.moved,
            },
        }


def diff_releases(old: Path, new: Path) -> ReleaseDiff:
    """Compare two releases by item id, using their ``index.json`` content hashes."""
    before = load_index(old)["items"]
    after = load_index(new)["items"]
    common = sorted(set(before) & set(after))
    return ReleaseDiff(
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
        changed=[i for i in common if before[i]["sha256"] != after[i]["sha256"]],
        moved=[i for i in common if before[i]["split"] != after[i]["split"]],
    )
