"""Publish a finished release to S3 or an S3-compatible store (MinIO, moto): ``s3://bucket/prefix``.

The release goes to ``<prefix>/<release folder name>/``, as ``--out DIR`` holds ``DIR/<name>-<version>/``.
Every file of the manifest is uploaded, ``manifest.json`` last, so a reader that sees a manifest can
trust every file it lists is already there. Releases are immutable, so publishing is idempotent and never
overwrites: before anything is uploaded the local release is verified against its manifest and every
object already under the release's prefix is compared with its local file; identical objects are skipped
(a re-run, or the rest of an interrupted upload), a differing one stops the publication with nothing
written. Each object carries its sha256 as metadata; after the upload every object is checked again
(size, sha256 metadata, ETag = MD5 where the store gives one) and the manifest is read back and compared.

Credentials come from boto3's usual chain (environment, shared config, instance role); boto3 honours
``AWS_ENDPOINT_URL_S3`` for an S3-compatible endpoint. boto3 is imported only when publishing: web
workers import this module's URL parsing through the export service.
"""

from __future__ import annotations

import hashlib
import logging
import mimetypes
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from exports.release_files import MANIFEST, ReleaseError, read_manifest, verify_release

logger = logging.getLogger(__name__)

_CONTENT_TYPES = {
    ".csv": "text/csv; charset=utf-8",
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}
# S3's bucket naming rules (3-63 lowercase letters, digits, dots and hyphens; letter or digit at both ends).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PLAIN_ETAG = re.compile(r"^[0-9a-f]{32}$")
_CHUNK = 1 << 20


class PublishError(ReleaseError):
    """A release cannot be published: a bad URL, the store refused, or an object differs."""


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix (no leading or trailing slash; empty for the bucket's root)."""

    bucket: str
    prefix: str = ""

    @property
    def url(self) -> str:
        """``s3://bucket/prefix/`` (with the trailing slash of a folder)."""
        return f"s3://{self.bucket}/{self.prefix}/" if self.prefix else f"s3://{self.bucket}/"

    def key(self, relative: str) -> str:
        """The object key of a path relative to this prefix."""
        return f"{self.prefix}/{relative}" if self.prefix else relative

    def child(self, name: str) -> S3Location:
        """The location of folder ``name`` under this prefix."""
        return S3Location(self.bucket, self.key(name))


def parse_s3_url(url: str) -> S3Location:
    """Read ``s3://bucket[/prefix]``.

    Raises:
        PublishError: not an ``s3://`` URL, or a bucket name S3 would not accept.
    """
    if not url.startswith("s3://"):
        raise PublishError(f"{url!r}: expected s3://bucket/prefix")
    bucket, _, prefix = url[len("s3://") :].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise PublishError(
            f"{url!r}: {bucket!r} is not a valid bucket name (3-63 lowercase letters, digits, '.' and '-')"
        )
    prefix = prefix.strip("/")
    if prefix and any(part in ("", ".", "..") for part in prefix.split("/")):
        raise PublishError(f"{url!r}: the prefix may not contain empty, '.' or '..' parts")
    return S3Location(bucket, prefix)


@dataclass(frozen=True)
class _LocalFile:
    relative: str
    path: Path
    size: int
    sha256: str
    md5: str


@dataclass
class Published:
    """What :func:`publish_release` did.

    Attributes:
        url: ``s3://bucket/prefix/<release folder>/``, where the manifest is.
        uploaded: keys written by this call, in upload order (manifest last).
        skipped: keys that held the identical object already.
    """

    url: str
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Summary for a job result or a command's JSON line."""
        return {"url": self.url, "uploaded": len(self.uploaded), "skipped": len(self.skipped)}


def _digests(path: Path) -> tuple[str, str]:
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            sha256.update(chunk)
            md5.update(chunk)
    return sha256.hexdigest(), md5.hexdigest()


def _local_files(release: Path) -> list[_LocalFile]:
    """The manifest's files, then the manifest, with the digests the upload and the checks need."""
    files = []
    for relative in [entry["path"] for entry in read_manifest(release)["files"]] + [MANIFEST]:
        path = release / relative
        sha256, md5 = _digests(path)
        files.append(_LocalFile(relative, path, path.stat().st_size, sha256, md5))
    return files


def _content_type(relative: str) -> str:
    return (
        _CONTENT_TYPES.get(Path(relative).suffix)
        or mimetypes.guess_type(relative)[0]
        or "application/octet-stream"
    )


@contextmanager
def _explained(location: S3Location, what: str) -> Iterator[None]:
    """Turn boto3's exceptions into a :class:`PublishError` that says what to do about them."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
    )

    try:
        yield
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise PublishError(
            f"no AWS credentials for {location.url} ({exc}): set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or another source boto3 reads"
        ) from exc
    except EndpointConnectionError as exc:
        raise PublishError(f"cannot reach the S3 endpoint for {location.url}: {exc}") from exc
    except ClientError as exc:
        error = exc.response.get("Error") or {}
        code = str(error.get("Code") or "")
        message = error.get("Message") or ""
        if code == "NoSuchBucket":
            raise PublishError(f"{location.url}: no bucket named '{location.bucket}'") from exc
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"):
            raise PublishError(
                f"{location.url}: the store rejected the AWS credentials ({code}: {message})"
            ) from exc
        if code in ("AccessDenied", "403", "AllAccessDisabled"):
            raise PublishError(
                f"{location.url}: access denied while {what}; the credentials need s3:ListBucket, "
                "s3:GetObject and s3:PutObject there"
            ) from exc
        raise PublishError(f"{location.url}: {what} failed: {code} {message}".rstrip()) from exc
    except BotoCoreError as exc:
        raise PublishError(f"{location.url}: {what} failed: {exc}") from exc


def _remote_objects(client: Any, location: S3Location) -> dict[str, dict[str, Any]]:
    """Key -> listing entry (``Size``, ``ETag``) of every object under ``location``'s prefix."""
    found: dict[str, dict[str, Any]] = {}
    prefix = location.key("")
    with _explained(location, "listing the prefix"):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=location.bucket, Prefix=prefix):
            for entry in page.get("Contents") or ():
                found[entry["Key"]] = entry
    return found


def _remote_sha256(client: Any, location: S3Location, key: str) -> Optional[str]:
    """The sha256 of an object: its metadata when crowdqa wrote it, else the hash of its bytes."""
    with _explained(location, f"reading {key}"):
        head = client.head_object(Bucket=location.bucket, Key=key)
        recorded = (head.get("Metadata") or {}).get("sha256")
        if recorded:
            return str(recorded)
        digest = hashlib.sha256()
        body = client.get_object(Bucket=location.bucket, Key=key)["Body"]
        for chunk in body.iter_chunks(_CHUNK):
            digest.update(chunk)
        return digest.hexdigest()


def _same(client: Any, location: S3Location, local: _LocalFile, remote: dict[str, Any]) -> bool:
    """True when the object under ``local``'s key holds exactly the local file's bytes."""
    if int(remote.get("Size", -1)) != local.size:
        return False
    return _remote_sha256(client, location, location.key(local.relative)) == local.sha256


def _check_uploaded(client: Any, location: S3Location, files: list[_LocalFile]) -> None:
    """After the upload: every object has its file's size and bytes (a plain ETag is the MD5 of the
    bytes; a multipart or encrypted store's ETag is not, so then the sha256 is compared), and the
    manifest read back is the local manifest."""
    remote = _remote_objects(client, location)
    problems = []
    for local in files:
        key = location.key(local.relative)
        entry = remote.get(key)
        if entry is None:
            problems.append(f"{key}: missing")
            continue
        etag = str(entry.get("ETag") or "").strip('"')
        if int(entry.get("Size", -1)) != local.size:
            problems.append(f"{key}: {entry.get('Size')} bytes, the release has {local.size}")
        elif _PLAIN_ETAG.match(etag):
            if etag != local.md5:
                problems.append(f"{key}: ETag {etag} is not the MD5 of the file ({local.md5})")
        elif _remote_sha256(client, location, key) != local.sha256:
            problems.append(f"{key}: sha256 differs from the manifest")
    manifest_key = location.key(MANIFEST)
    with _explained(location, "reading the manifest back"):
        stored = client.get_object(Bucket=location.bucket, Key=manifest_key)["Body"].read()
    if hashlib.sha256(stored).hexdigest() != files[-1].sha256:
        problems.append(f"{manifest_key}: read back, it differs from the release's manifest")
    if problems:
        raise PublishError(f"{location.url}: the published copy does not match: " + "; ".join(problems[:5]))


def s3_client() -> Any:
    """A boto3 S3 client from the usual configuration (credentials chain, ``AWS_ENDPOINT_URL_S3``).

    A new session each time: boto3's default session keeps the credentials it found first, so a
    long-running worker would not see rotated or newly configured ones.
    """
    import boto3

    return boto3.session.Session().client("s3")


def publish_release(
    release: Path, target: S3Location, client: Any, folder: Optional[str] = None
) -> Published:
    """Publish a verified release to ``target/<release folder name>/``, manifest last.

    Args:
        release: the release directory.
        target: where releases go; the release's folder is created under it.
        client: a boto3 S3 client (:func:`s3_client`).
        folder: the release's folder name when ``release`` is a copy under another name (a host's
            cached copy of a release built elsewhere); default ``release.name``.

    Returns:
        The release's URL and the keys uploaded and skipped.

    Raises:
        exports.release_files.ReleaseIntegrityError: the local release does not match its manifest.
        PublishError: an object under the release's prefix differs from its file (nothing uploaded),
            the store refused (no bucket, no or rejected credentials, access denied), or the
            published copy does not match after the upload.
    """
    release = Path(release)
    verify_release(release)
    location = target.child(folder or release.name)
    files = _local_files(release)
    remote = _remote_objects(client, location)
    result = Published(url=location.url)
    pending = []
    differing = []
    for local in files:
        key = location.key(local.relative)
        if key not in remote:
            pending.append(local)
        elif _same(client, location, local, remote[key]):
            result.skipped.append(key)
        else:
            differing.append(key)
    if differing:
        raise PublishError(
            f"{location.url} holds {len(differing)} object(s) that differ from this release ("
            + ", ".join(differing[:5])
            + "); releases are immutable, publish a new version or another prefix"
        )
    for local in pending:
        key = location.key(local.relative)
        with _explained(location, f"uploading {key}"):
            with local.path.open("rb") as body:
                client.put_object(
                    Bucket=location.bucket,
                    Key=key,
                    Body=body,
                    ContentType=_content_type(local.relative),
                    Metadata={"sha256": local.sha256},
                )
        result.uploaded.append(key)
    _check_uploaded(client, location, files)
    logger.info(
        "Release(%s) published to %s: %d uploaded, %d already there",
        release.name,
        location.url,
        len(result.uploaded),
        len(result.skipped),
    )
    return result
