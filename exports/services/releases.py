"""The release catalogue: register a release directory once, find it again by path or by id.

``export_release`` registers what it writes; ``run_benchmark --release DIR`` registers a directory it
has not seen (a release copied from elsewhere), so every benchmark run points at a catalogue row.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

from django.utils import timezone

from exports.models import Release
from exports.release import MANIFEST, ReleaseError, read_manifest


def register_release(path: Path | str) -> Release:
    """Return the catalogue row of the release at ``path``, creating it from its manifest on first use.

    Raises:
        ReleaseError: ``path`` is not a release, or its manifest changed since it was registered
            (releases are immutable; a changed one is a different release and needs a new version).
    """
    directory = Path(path).resolve()
    manifest = read_manifest(directory)
    digest = hashlib.sha256((directory / MANIFEST).read_bytes()).hexdigest()
    existing = Release.objects.filter(path=str(directory)).first()
    if existing is not None:
        if existing.manifest_sha256 != digest:
            raise ReleaseError(
                f"{directory}: manifest.json changed since release {existing} was registered; "
                "releases are immutable, write a new version instead"
            )
        return existing
    split = manifest.get("split") or {}
    created = datetime.fromisoformat(manifest["created"]) if manifest.get("created") else timezone.now()
    if timezone.is_naive(created):
        created = timezone.make_aware(created, timezone.utc)
    release, _ = Release.objects.update_or_create(
        name=manifest["name"],
        version=manifest["version"],
        defaults={
            "path": str(directory),
            "manifest_sha256": digest,
            "kind": manifest.get("kind", ""),
            "counts": split.get("counts") or {},
            "seed": split.get("seed"),
            "ratios": split.get("target_ratios") or split.get("target_sizes") or {},
            "source": ",".join(str(b) for b in manifest.get("source_batches") or []),
            "created": created,
        },
    )
    return release
