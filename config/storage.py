"""Where the platform keeps the files it writes: one setting, ``CROWDQA_STORAGE_URL``, for every host.

Unset (the demo, one machine), everything stays on the local disk under ``CROWDQA_VAR_DIR`` as before.
Set to ``s3://BUCKET/PREFIX``, the files every host must see (releases, benchmark per-item results, the
trained ranker, uploaded media) go to that bucket through Django's storage API with django-storages'
S3 backend, so a release built by a worker on one host is downloaded from a web process on another.
Credentials come from boto3's usual chain (environment, shared config, instance role); boto3 honours
``AWS_ENDPOINT_URL_S3`` for an S3-compatible store (MinIO, Ceph, moto).

The settings module calls :func:`storages_setting` to build ``STORAGES``; a malformed URL never falls
back to the local disk: the ``crowdqa`` storage then refuses every use and system check
``crowdqa.E030`` stops the web server (``config/wsgi.py``) and ``manage.py check``.

Keys inside the shared storage (below ``PREFIX``): ``releases/<name>-<version>/...``,
``benchmarks/<run id>.json``, ``models/<model>/<version>/...`` with ``models/<model>/current.json``,
and ``media/...`` (the ``default`` storage of FileFields).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

SCHEME = "s3://"
STORAGE_ALIAS = "crowdqa"
"""The name of the shared storage in ``settings.STORAGES``."""
# S3's bucket naming rules (3-63 lowercase letters, digits, dots and hyphens; letter or digit at both ends).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_PREFIX_PART = re.compile(r"^[A-Za-z0-9._-]+$")


class StorageURLError(ValueError):
    """``CROWDQA_STORAGE_URL`` is not ``s3://BUCKET[/PREFIX]``."""


@dataclass(frozen=True)
class StorageLocation:
    """A bucket and a key prefix (no leading or trailing slash; empty for the bucket's root)."""

    bucket: str
    prefix: str = ""

    @property
    def url(self) -> str:
        """``s3://bucket/prefix`` (no trailing slash)."""
        return f"{SCHEME}{self.bucket}/{self.prefix}".rstrip("/")

    def url_of(self, key: str) -> str:
        """The ``s3://`` URL of ``key`` (a key relative to the prefix)."""
        return f"{self.url}/{key.lstrip('/')}"

    def key_of(self, url: str) -> Optional[str]:
        """The key (relative to the prefix) of an ``s3://`` URL inside this location, else None."""
        head = self.url + "/"
        return url[len(head) :] if url.startswith(head) and len(url) > len(head) else None


def parse_storage_url(url: str) -> StorageLocation:
    """Parse ``s3://BUCKET[/PREFIX]``.

    Raises:
        StorageURLError: another scheme, a bucket S3 would refuse, or a prefix with empty, ``.``/``..``
            or unusual parts (the prefix becomes part of every key, so it stays plain).
    """
    text = url.strip()
    if not text.startswith(SCHEME):
        raise StorageURLError(f"{url!r} is not an s3:// URL (s3://BUCKET/PREFIX)")
    bucket, _, prefix = text[len(SCHEME) :].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        raise StorageURLError(f"{url!r}: {bucket!r} is not a valid S3 bucket name")
    prefix = prefix.rstrip("/")
    parts = prefix.split("/") if prefix else []
    for part in parts:
        if part in ("", ".", "..") or not _PREFIX_PART.match(part):
            raise StorageURLError(f"{url!r}: the prefix part {part!r} is not allowed")
    return StorageLocation(bucket=bucket, prefix=prefix)


def _s3_backend(location: StorageLocation, below: str) -> dict[str, Any]:
    key_prefix = "/".join(p for p in (location.prefix, below) if p)
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": location.bucket,
            "location": key_prefix,
            # Names are chosen by crowdqa (run ids, release folders, versions); a write replaces.
            "file_overwrite": True,
            "default_acl": None,
            # Files are served by crowdqa's own views, or by short signed URLs where a view says so.
            "querystring_auth": True,
            "querystring_expire": 300,
            # Signature version 4 (AWS refuses version 2 in newer regions; S3-compatible stores take it).
            "signature_version": "s3v4",
        },
    }


def storages_setting(url: str, var_dir: Path) -> tuple[dict[str, Any], str]:
    """``STORAGES`` for ``CROWDQA_STORAGE_URL`` (``url``) and the error that makes it unusable, if any.

    Returns:
        ``(storages, error)``: with no URL, the local disk (``var_dir`` for the shared storage,
        ``MEDIA_ROOT`` for media); with a valid URL, S3 for both; with a malformed one, a shared storage
        that refuses every use (:class:`RefusingStorage`) and the error text for ``crowdqa.E030``.
    """
    static = {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"}
    if not url.strip():
        local = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
        shared = {**local, "OPTIONS": {"location": str(var_dir), "allow_overwrite": True}}
        return {"default": local, "staticfiles": static, STORAGE_ALIAS: shared}, ""
    try:
        location = parse_storage_url(url)
    except StorageURLError as exc:
        refusing = {"BACKEND": "config.storage.RefusingStorage", "OPTIONS": {"reason": str(exc)}}
        return {"default": refusing, "staticfiles": static, STORAGE_ALIAS: refusing}, str(exc)
    return {
        "default": _s3_backend(location, "media"),
        "staticfiles": static,
        STORAGE_ALIAS: _s3_backend(location, ""),
    }, ""


class RefusingStorage:
    """The storage of a malformed ``CROWDQA_STORAGE_URL``: every use raises, nothing is written locally."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    def __getattr__(self, name: str) -> Any:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(f"CROWDQA_STORAGE_URL is malformed ({self.reason}); nothing is stored")


def shared_location() -> Optional[StorageLocation]:
    """The configured ``s3://`` location, or None when files stay on this host's disk (the default)."""
    from django.conf import settings

    url = str(getattr(settings, "CROWDQA_STORAGE_URL", "") or "")
    return parse_storage_url(url) if url.strip() else None


def shared_storage() -> Any:
    """The ``crowdqa`` storage of ``settings.STORAGES`` (S3, or ``CROWDQA_VAR_DIR`` on the local disk)."""
    from django.core.files.storage import storages

    return storages[STORAGE_ALIAS]


def cache_dir(kind: str) -> Path:
    """This host's cache of shared files of one kind (``CROWDQA_CACHE_DIR/<kind>``, created)."""
    from django.conf import settings

    path = Path(settings.CROWDQA_CACHE_DIR) / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def upload_file(local: Path, key: str) -> None:
    """Write the local file ``local`` to ``key`` of the shared storage (replacing what was there)."""
    from django.core.files import File

    with local.open("rb") as handle:
        saved = shared_storage().save(key, File(handle, name=local.name))
    if saved != key:  # a storage that renames would break every reader of ``key``
        raise OSError(f"the shared storage stored {key!r} as {saved!r}")


def upload_bytes(key: str, data: bytes) -> None:
    """Write ``data`` to ``key`` of the shared storage (replacing what was there)."""
    from django.core.files.base import ContentFile

    saved = shared_storage().save(key, ContentFile(data, name=key.rsplit("/", 1)[-1]))
    if saved != key:
        raise OSError(f"the shared storage stored {key!r} as {saved!r}")


def read_bytes(key: str) -> bytes:
    """The content of ``key`` of the shared storage (FileNotFoundError when it is not there)."""
    with shared_storage().open(key, "rb") as handle:
        return handle.read()


def download_file(key: str, target: Path, chunk: int = 1 << 20) -> None:
    """Copy ``key`` of the shared storage to the local file ``target`` (parents created)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with shared_storage().open(key, "rb") as source, target.open("wb") as sink:
        while block := source.read(chunk):
            sink.write(block)


def share_file(local: Path, key: str) -> str:
    """Make a file this host wrote visible to every host: where a row should record it.

    Returns:
        With a shared storage, the file's ``s3://`` URL after copying it to ``key``; without one, the
        local path as a string (one machine reads its own disk).
    """
    location = shared_location()
    if location is None:
        return str(local)
    upload_file(local, key)
    return location.url_of(key)


def shared_key(recorded: str) -> Optional[str]:
    """The key in this host's shared storage of a recorded ``s3://`` URL (None: not in it, or local)."""
    location = shared_location()
    return location.key_of(recorded) if location is not None and recorded.startswith(SCHEME) else None


def local_media_path(field_file: Any) -> Path:
    """A local path of an uploaded file (a FileField's value), for code that needs a real file (PDF
    rendering). On the local disk that is the file itself; from S3, this host's copy in
    ``CROWDQA_CACHE_DIR/media/<name>``, fetched again when the stored size differs.
    """
    try:
        return Path(field_file.path)
    except NotImplementedError:  # a storage without local paths (S3)
        pass
    name = str(field_file.name)
    if name.startswith("/") or ".." in name.split("/"):
        raise FileNotFoundError(f"media name {name!r} is not a relative path")
    target = cache_dir("media") / name
    size = field_file.storage.size(name)
    if not target.is_file() or target.stat().st_size != size:
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        partial.parent.mkdir(parents=True, exist_ok=True)
        with field_file.storage.open(name, "rb") as source, partial.open("wb") as sink:
            while block := source.read(1 << 20):
                sink.write(block)
        os.replace(partial, target)
    return target
