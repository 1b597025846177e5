"""Releases in the shared storage (``CROWDQA_STORAGE_URL``), so any host reads what a worker built.

A release is built into a local directory (``CROWDQA_RELEASES_DIR`` of the worker that ran the export)
and, when a shared storage is configured, copied to ``releases/<folder>/`` there (every file of the
manifest, ``manifest.json`` last, so a reader that sees the manifest finds every file it lists). The
catalogue row then records the storage URL (``s3://bucket/prefix/releases/<folder>``) as its ``path``.

A host that reads a stored release (a page, a download, a benchmark) fetches it once into its own cache,
``CROWDQA_CACHE_DIR/releases/<folder>-<manifest sha256 prefix>/``, and uses it only after the copy
matches the catalogue's manifest digest and every file matches the manifest (sha256, size, rows):
a release changed in the bucket is refused, never served. The copy is fetched into a temporary
directory and renamed into place, so two processes of one host never see half a release.

The cache is bounded (``CROWDQA_CACHE_MAX_BYTES``): after a fetch, the copies used least recently are
removed until the releases' cache fits, never the one just fetched nor one used within
``RECENTLY_USED_SECONDS`` (a download or benchmark may be reading it). A copy is renamed out of the way
before it is deleted, so a reader never finds half of one; the next read fetches it again.

With ``CROWDQA_SIGNED_URL_SECONDS`` set, a single file of a stored release is downloaded from the storage
itself through a short-lived signed URL (:func:`signed_file_url`) instead of through this host's copy.

Without a shared storage (the demo) the row's ``path`` is the local directory, used as it is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from config.storage import (
    cache_dir,
    download_file,
    read_bytes,
    shared_location,
    shared_storage,
    upload_bytes,
    upload_file,
)
from exports.models import Release
from exports.release_files import (
    MANIFEST,
    ReleaseError,
    ReleaseIntegrityError,
    read_manifest,
    verify_release,
)

logger = logging.getLogger(__name__)

PREFIX = "releases"
RECENTLY_USED_SECONDS = 600
"""A cached copy used more recently than this is never pruned (it may be being read)."""


def is_stored(path: str) -> bool:
    """Whether a catalogue ``path`` names a release in the shared storage (not a local directory)."""
    return path.startswith("s3://")


def stored_url(directory: Path) -> str | None:
    """The storage URL a release built in ``directory`` gets, or None without a shared storage."""
    location = shared_location()
    return location.url_of(f"{PREFIX}/{Path(directory).name}") if location is not None else None


def store_release(directory: Path) -> str | None:
    """Copy a verified release directory to the shared storage; its storage URL, or None without one.

    A release stored already with the same manifest is left as it is (a retried job); nothing stored is
    ever overwritten.

    Raises:
        ReleaseIntegrityError: the local release does not match its own manifest (nothing is copied).
        ReleaseError: another release is stored under the same folder name.
    """
    location = shared_location()
    if location is None:
        return None
    directory = Path(directory)
    verify_release(directory)
    manifest = read_manifest(directory)
    base = f"{PREFIX}/{directory.name}"
    local_manifest = (directory / MANIFEST).read_bytes()
    try:
        stored_manifest = read_bytes(f"{base}/{MANIFEST}")
    except FileNotFoundError:
        stored_manifest = None
    if stored_manifest == local_manifest:  # stored earlier (a retried job): releases are immutable
        return location.url_of(base)
    if stored_manifest is not None:
        raise ReleaseError(
            f"{location.url_of(base)} holds another release with the same folder name; releases are "
            "immutable, choose a new version"
        )
    for entry in manifest["files"]:
        upload_file(directory / entry["path"], f"{base}/{entry['path']}")
    upload_bytes(f"{base}/{MANIFEST}", local_manifest)
    logger.info(
        "release %s copied to %s (%d files)", directory, location.url_of(base), len(manifest["files"])
    )
    return location.url_of(base)


def _fetch(release: Release, key: str, target: Path) -> None:
    """Fetch the stored release at ``key`` into ``target`` (absent), verified, or raise ReleaseError."""
    manifest_bytes = read_bytes(f"{key}/{MANIFEST}")
    digest = hashlib.sha256(manifest_bytes).hexdigest()
    if digest != release.manifest_sha256:
        raise ReleaseError(
            f"Release({release.pk}) {release}: the stored manifest.json changed since it was registered "
            f"(sha256 {digest[:12]}… != {release.manifest_sha256[:12]}…); releases are immutable"
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        (staging / MANIFEST).write_bytes(manifest_bytes)
        for entry in read_manifest(staging)["files"]:
            relative = Path(entry["path"])
            if relative.is_absolute() or ".." in relative.parts:
                raise ReleaseError(f"Release({release.pk}): the manifest lists {entry['path']!r}")
            download_file(f"{key}/{entry['path']}", staging / relative)
        verify_release(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / MANIFEST).is_file():  # not another process of this host arriving first
                raise
    except FileNotFoundError as exc:
        raise ReleaseError(
            f"Release({release.pk}) {release}: a file is missing in the storage ({exc})"
        ) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def release_root(release: Release) -> Path:
    """A local directory holding ``release``: its own path, or this host's verified copy of a stored one.

    Raises:
        ReleaseError: the stored release is not in this host's storage, is missing there, or does not
            match the catalogue's manifest digest or its own manifest (ReleaseIntegrityError).
    """
    if not is_stored(release.path):
        return Path(release.path)
    location = shared_location()
    key = location.key_of(release.path) if location is not None else None
    if key is None:
        raise ReleaseError(
            f"Release({release.pk}) {release} is stored at {release.path}, outside this host's "
            f"CROWDQA_STORAGE_URL ({location.url if location else 'unset'})"
        )
    target = cache_dir(PREFIX) / f"{key.rsplit('/', 1)[-1]}-{release.manifest_sha256[:16]}"
    if (target / MANIFEST).is_file():
        _mark_used(target)
        return target
    _fetch(release, key, target)
    logger.info("Release(%s) %s fetched from %s into %s", release.pk, release, release.path, target)
    from django.conf import settings

    prune_cache(int(getattr(settings, "CROWDQA_CACHE_MAX_BYTES", 0) or 0), keep=target)
    return target


def _mark_used(copy: Path) -> None:
    """Record that a cached copy was used now (its folder's modification time: what pruning reads)."""
    try:
        os.utime(copy)
    except OSError:  # pruned by another process meanwhile: the caller's next read fetches it again
        pass


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def prune_cache(limit: int, keep: Path | None = None) -> list[Path]:
    """Remove this host's least recently used release copies until they fit in ``limit`` bytes.

    Args:
        limit: the bound in bytes; 0 or less keeps everything.
        keep: a copy never removed (the one just fetched).

    Returns:
        The copies removed, least recently used first. Copies used within
        :data:`RECENTLY_USED_SECONDS` stay even when the bound is passed (logged).
    """
    if limit <= 0:
        return []
    root = cache_dir(PREFIX)
    copies = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    used = {p: p.stat().st_mtime for p in copies}
    sizes = {p: _size(p) for p in copies}
    total = sum(sizes.values())
    removed: list[Path] = []
    now = time.time()
    for copy in sorted(copies, key=lambda p: used[p]):
        if total <= limit:
            break
        if copy == keep or now - used[copy] < RECENTLY_USED_SECONDS:
            continue
        trash = root / f".pruned-{copy.name}-{os.getpid()}"
        try:
            os.rename(copy, trash)
        except OSError:  # another process pruned or renamed it first
            continue
        shutil.rmtree(trash, ignore_errors=True)
        total -= sizes[copy]
        removed.append(copy)
    if removed:
        logger.info("release cache %s: removed %d copies, %d bytes left", root, len(removed), total)
    if total > limit:
        logger.warning(
            "release cache %s holds %d bytes, over CROWDQA_CACHE_MAX_BYTES (%d): the rest is in use",
            root,
            total,
            limit,
        )
    return removed


def _stored_key(release: Release) -> str:
    location = shared_location()
    key = location.key_of(release.path) if location is not None and is_stored(release.path) else None
    if key is None:
        raise ReleaseError(
            f"Release({release.pk}) {release} is not in this host's CROWDQA_STORAGE_URL "
            f"({location.url if location else 'unset'})"
        )
    return key


def signed_file_url(release: Release, relpath: str, seconds: int, disposition: str) -> str:
    """A signed URL of one file of a stored release, valid ``seconds``, after the checks this host can
    make without reading the file: the stored manifest matches the digest the catalogue recorded at
    export and lists ``relpath`` (or is it), and the stored object has the manifest's size. The bytes
    themselves are checked by whoever downloads them, against the manifest's sha256.

    Args:
        disposition: the ``Content-Disposition`` the storage answers with (inline or attachment).

    Raises:
        LookupError: the manifest lists no such file.
        ReleaseError: the release is not in this host's storage, or its manifest changed since it was
            registered; ReleaseIntegrityError when the stored object's size differs from the manifest.
    """
    key = _stored_key(release)
    manifest_bytes = read_bytes(f"{key}/{MANIFEST}")
    if hashlib.sha256(manifest_bytes).hexdigest() != release.manifest_sha256:
        raise ReleaseError(
            f"Release({release.pk}) {release}: the stored manifest.json changed since it was registered; "
            "releases are immutable"
        )
    if relpath != MANIFEST:
        entry = next((e for e in json.loads(manifest_bytes)["files"] if e["path"] == relpath), None)
        if entry is None:
            raise LookupError(f"Release({release.pk}) lists no file {relpath!r}")
        size = shared_storage().size(f"{key}/{relpath}")
        if entry.get("bytes") is not None and size != entry["bytes"]:
            raise ReleaseIntegrityError(
                Path(release.path), [f"{relpath}: {size} bytes stored, {entry['bytes']} in the manifest"]
            )
    return shared_storage().url(
        f"{key}/{relpath}", expire=seconds, parameters={"ResponseContentDisposition": disposition}
    )
