"""The release catalogue: register a release directory once, find it again by path or by id.

``export_release`` registers what it writes; ``run_benchmark --release DIR`` registers a directory it
has not seen (a release copied from elsewhere), so every benchmark run points at a catalogue row.

Identity rules (releases are immutable, docs/reference/releases.md):

* a directory is registered once; registering it again returns its row, unless its ``manifest.json``
  changed meanwhile, which is refused;
* ``name`` + ``version`` names one release: another directory with the same name and version but a
  different manifest is refused (:class:`~exports.release_files.ReleaseError`), never overwrites the row;
* the *same* manifest (same sha256) found at another path is the same release copied or moved. When the
  registered directory still holds that manifest, the existing row is returned unchanged (the copy is
  a mirror; benchmark runs keep pointing at the original). When the registered directory is gone or no
  longer holds it, the row follows the release to its new path (a moved release keeps its history).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Optional

from django.db import IntegrityError, transaction
from django.utils import timezone

from exports.models import Release
from exports.release_files import MANIFEST, ReleaseError, read_manifest
from exports.release_store import is_stored

logger = logging.getLogger(__name__)


def _manifest_digest(directory: Path) -> Optional[str]:
    """sha256 of ``directory/manifest.json``, or None when it is not there."""
    try:
        return hashlib.sha256((directory / MANIFEST).read_bytes()).hexdigest()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _row_values(recorded: str, manifest: dict[str, Any], digest: str) -> dict[str, Any]:
    """Catalogue fields taken from a manifest."""
    split = manifest.get("split") or {}
    created = datetime.fromisoformat(manifest["created"]) if manifest.get("created") else timezone.now()
    if timezone.is_naive(created):
        created = timezone.make_aware(created, UTC)
    return {
        "path": recorded,
        "manifest_sha256": digest,
        "kind": manifest.get("kind", ""),
        "counts": split.get("counts") or {},
        "seed": split.get("seed"),
        "ratios": split.get("target_ratios") or split.get("target_sizes") or {},
        "source": str(manifest.get("source") or "")
        or ",".join(str(b) for b in manifest.get("source_batches") or []),
        "created": created,
    }


def registered_as(name: str, version: str) -> Optional[Release]:
    """The catalogue row named ``name`` ``version``, if any (``export_release`` checks before writing)."""
    return Release.objects.filter(name=name, version=version).order_by("pk").first()


def register_release(path: Path | str, stored_at: Optional[str] = None) -> Release:
    """Return the catalogue row of the release at ``path``, creating it from its manifest on first use.

    Args:
        path: a release directory (one holding ``manifest.json``).
        stored_at: the release's URL in the shared storage when it was copied there
            (:func:`exports.release_store.store_release`); the row records it instead of ``path``, so
            every host finds the release.

    Returns:
        The existing or new :class:`~exports.models.Release` (see the module docstring for copies and
        moved releases).

    Raises:
        ReleaseError: ``path`` is not a release; its manifest changed since it was registered; or
            another directory is registered under the same name and version with a different manifest
            (releases are immutable; a changed one is a different release and needs a new version).
    """
    directory = Path(path).resolve()
    recorded = stored_at or str(directory)
    manifest = read_manifest(directory)
    digest = _manifest_digest(directory)
    assert digest is not None  # read_manifest just read it
    for key in ("name", "version"):
        if not manifest.get(key):
            raise ReleaseError(f"{directory / MANIFEST}: no '{key}'; not a crowdqa release manifest")
    name, version = str(manifest["name"]), str(manifest["version"])
    with transaction.atomic():
        at_path = Release.objects.select_for_update(of=("self",)).filter(path=recorded).order_by("pk").first()
        if at_path is not None:
            if at_path.manifest_sha256 != digest:
                raise ReleaseError(
                    f"{directory}: manifest.json changed since Release({at_path.pk}) {at_path} was "
                    "registered; releases are immutable, write a new version instead"
                )
            return at_path
        named = (
            Release.objects.select_for_update(of=("self",))
            .filter(name=name, version=version)
            .order_by("pk")
            .first()
        )
        if named is not None:
            if named.manifest_sha256 != digest:
                raise ReleaseError(
                    f"{directory}: release {name} {version} is registered already as Release({named.pk}) "
                    f"at {named.path} with a different manifest; releases are immutable, choose a new "
                    "version"
                )
            if is_stored(named.path) or _manifest_digest(Path(named.path)) == digest:
                logger.info("Release(%s) %s: %s is a copy of %s", named.pk, named, directory, named.path)
                return named
            logger.info("Release(%s) %s moved from %s to %s", named.pk, named, named.path, recorded)
            named.path = recorded
            named.save(update_fields=["path"])
            return named
        try:
            with transaction.atomic():
                release = Release.objects.create(
                    name=name, version=version, **_row_values(recorded, manifest, digest)
                )
        except IntegrityError as exc:
            # Another process registered the same name/version or path between our check and insert.
            raise ReleaseError(
                f"{directory}: release {name} {version} was registered concurrently; register it again"
            ) from exc
    logger.info("Release(%s) %s registered at %s", release.pk, release, recorded)
    return release


def register_shared(path: Path | str) -> Release:
    """:func:`register_release` for a release directory a command or page names on this host.

    With a shared storage (``CROWDQA_STORAGE_URL``), a release the catalogue does not know yet is first
    copied there (:func:`exports.release_store.store_release`), so that every host can read what the row
    points at; a known one (this host's cached copy, or a copy of it) keeps its row. Without a shared
    storage this is :func:`register_release`.
    """
    from exports.release_store import store_release, stored_url

    directory = Path(path).resolve()
    manifest = read_manifest(directory)
    known = Release.objects.filter(name=manifest.get("name"), version=manifest.get("version")).exists()
    if known or stored_url(directory) is None:
        return register_release(directory)
    return register_release(directory, stored_at=store_release(directory))
