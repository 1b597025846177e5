"""The trained ranker in the shared storage, so a ranker trained on one host serves on every host.

Without ``CROWDQA_STORAGE_URL`` (one machine) the ranker lives in ``CROWDQA_MODEL_DIR/distractors`` and
is read from there. With a shared storage, training publishes the model directory as a version:
``models/distractors/<version>/<file>`` for each file, then ``models/distractors/current.json``
(``{"version", "files": {path: sha256}}``) written last, so a reader that sees a version finds all its
files. The version is the ranker's own ``model_version`` and a digest of the files, so retraining with
the same settings but a different result is a new version.

Each host fetches the current version once into ``CROWDQA_CACHE_DIR/models/distractors/<version>/``
(into a temporary directory, every file checked against its sha256, then renamed into place) and reads
``current.json`` again at most every ``CROWDQA_MODEL_CHECK_SECONDS``, so a ranker retrained on another
host replaces this host's within that time, without a restart.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from django.conf import settings

from annotation.hashing import file_sha256
from config.storage import cache_dir, download_file, read_bytes, shared_location, upload_bytes, upload_file

logger = logging.getLogger(__name__)

NAME = "distractors"
PREFIX = f"models/{NAME}"
POINTER = f"{PREFIX}/current.json"
SIDECAR = "ranker.json"

_lock = threading.Lock()
_checked: dict[str, Any] = {"at": float("-inf"), "dir": None}


class ModelStoreError(RuntimeError):
    """The stored ranker cannot be fetched or does not match its own file list."""


def local_model_dir() -> Path:
    """Where this host trains and (without a shared storage) serves the ranker."""
    return Path(settings.CROWDQA_MODEL_DIR) / NAME


def _files(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): file_sha256(path)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def publish_model(directory: Path) -> Optional[str]:
    """Copy a trained ranker directory to the shared storage as the current version.

    Returns:
        The version published, or None without a shared storage (the directory is served as it is).
    """
    if shared_location() is None:
        return None
    directory = Path(directory)
    files = _files(directory)
    sidecar = json.loads((directory / SIDECAR).read_text(encoding="utf-8"))
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:12]
    version = f"{sidecar.get('model_version') or 'ranker'}-{digest}".replace("/", "-")
    for relative in files:
        upload_file(directory / relative, f"{PREFIX}/{version}/{relative}")
    pointer = {"version": version, "files": files, "published": time.time()}
    upload_bytes(POINTER, json.dumps(pointer, indent=1).encode())
    logger.info("distractor ranker %s published (%d files)", version, len(files))
    with _lock:
        _checked["at"] = float("-inf")  # this process serves the new version at once
    return version


def _fetch(pointer: dict[str, Any]) -> Path:
    """This host's verified copy of the version ``pointer`` names (fetched when it is not there)."""
    version = str(pointer["version"])
    if not version or "/" in version or version.startswith("."):
        raise ModelStoreError(f"{POINTER}: version {version!r} is not a folder name")
    target = cache_dir(f"models/{NAME}") / version
    if (target / SIDECAR).is_file():
        return target
    staging = Path(tempfile.mkdtemp(prefix=f".{version}-", dir=target.parent))
    try:
        for relative, sha256 in pointer["files"].items():
            parts = Path(relative).parts
            if Path(relative).is_absolute() or ".." in parts:
                raise ModelStoreError(f"{POINTER} lists {relative!r}")
            download_file(f"{PREFIX}/{version}/{relative}", staging / relative)
            if file_sha256(staging / relative) != sha256:
                raise ModelStoreError(f"{PREFIX}/{version}/{relative}: sha256 differs from {POINTER}")
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / SIDECAR).is_file():
                raise
    except FileNotFoundError as exc:
        raise ModelStoreError(f"ranker {version}: a file is missing in the storage ({exc})") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    logger.info("distractor ranker %s fetched into %s", version, target)
    return target


def current_model_dir() -> Path:
    """The directory the stage-2 HIT loads the ranker from on this host.

    Without a shared storage, :func:`local_model_dir`. With one, this host's copy of the current
    version (``current.json`` read again at most every ``CROWDQA_MODEL_CHECK_SECONDS``); before any
    ranker is published, :func:`local_model_dir` (empty on a fresh host: the WordNet fallback serves).
    """
    if shared_location() is None:
        return local_model_dir()
    every = float(getattr(settings, "CROWDQA_MODEL_CHECK_SECONDS", 30))
    with _lock:
        if time.monotonic() - _checked["at"] < every and _checked["dir"] is not None:
            return _checked["dir"]
        try:
            pointer = json.loads(read_bytes(POINTER))
        except FileNotFoundError:
            directory = local_model_dir()
        else:
            directory = _fetch(pointer)
        _checked.update(at=time.monotonic(), dir=directory)
        return directory
