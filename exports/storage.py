"""Publish a finished release: copy it to another local folder or upload it to an S3 prefix.

Both refuse to overwrite an existing release and put ``manifest.json`` last, so a reader that sees a
manifest can trust every file it lists is already there. boto3 honours ``AWS_ENDPOINT_URL_S3`` for
S3-compatible stores (MinIO, moto).
"""

from __future__ import annotations

import logging
import mimetypes
import shutil
from pathlib import Path
from typing import Any

from exports.release import MANIFEST, ReleaseError, read_manifest, verify_release

logger = logging.getLogger(__name__)

_CONTENT_TYPES = {
    ".csv": "text/csv; charset=utf-8",
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".png": "image/png",
}


def _ordered_files(release: Path) -> list[str]:
    """Files of the manifest, then the manifest itself."""
    manifest = read_manifest(release)
    return [entry["path"] for entry in manifest["files"]] + [MANIFEST]


def copy_release(release: Path, dest_dir: Path) -> Path:
    """Copy a verified release into ``dest_dir/<release folder name>``.

    Returns:
        The copy's path.

    Raises:
        ReleaseError: the destination exists.
        exports.release.ReleaseIntegrityError: the source or the copy does not match its manifest.
    """
    release = Path(release)
    verify_release(release)
    dest = Path(dest_dir) / release.name
    if dest.exists():
        raise ReleaseError(f"{dest} exists already; releases are immutable")
    for relative in _ordered_files(release):
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(release / relative, target)
    verify_release(dest)
    logger.info("Release(%s) copied to %s", release.name, dest)
    return dest


def s3_key(prefix: str, relative: str) -> str:
    """Join an S3 prefix and a release-relative path with exactly one slash."""
    prefix = prefix.strip("/")
    return f"{prefix}/{relative}" if prefix else relative


def upload_release(release: Path, client: Any, *, bucket: str, prefix: str) -> list[str]:
    """Upload a verified release to ``s3://bucket/prefix/``, manifest last.

    Args:
        release: the release directory.
        client: a boto3 S3 client (``boto3.client("s3")``).
        bucket: target bucket.
        prefix: key prefix, e.g. ``releases/syllabusqa-crowd-1.0.0``.

    Returns:
        The keys written, in upload order.

    Raises:
        ReleaseError: a manifest already exists under the prefix.
        exports.release.ReleaseIntegrityError: the local release does not match its manifest.
    """
    release = Path(release)
    verify_release(release)
    manifest_key = s3_key(prefix, MANIFEST)
    existing = client.list_objects_v2(Bucket=bucket, Prefix=manifest_key, MaxKeys=1)
    if existing.get("KeyCount", 0):
        raise ReleaseError(f"s3://{bucket}/{manifest_key} exists already; releases are immutable")
    checksums = {entry["path"]: entry["sha256"] for entry in read_manifest(release)["files"]}
    keys = []
    for relative in _ordered_files(release):
        key = s3_key(prefix, relative)
        suffix = Path(relative).suffix
        content_type = (
            _CONTENT_TYPES.get(suffix) or mimetypes.guess_type(relative)[0] or "application/octet-stream"
        )
        extra: dict[str, Any] = {"ContentType": content_type}
        if relative in checksums:
            extra["Metadata"] = {"sha256": checksums[relative]}
        client.upload_file(str(release / relative), bucket, key, ExtraArgs=extra)
        keys.append(key)
    logger.info("Release(%s) uploaded to s3://%s/%s (%d files)", release.name, bucket, prefix, len(keys))
    return keys
