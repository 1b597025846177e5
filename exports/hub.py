"""Publish a finished release to a Hugging Face Hub dataset repository: ``hf://OWNER/NAME``.

The release's files, its manifest and a ``README.md`` (the dataset card, ``card.md``, under YAML front
matter whose ``configs`` name each split's data file, so ``datasets.load_dataset("OWNER/NAME")`` yields
the release's splits) go to the repository's ``main`` branch in one commit, and the release's version
becomes a tag on that commit: ``load_dataset("OWNER/NAME", revision="1.0")`` reads exactly this release.

Releases are immutable, as on S3 (:mod:`exports.storage`):
- the local release is verified against its manifest first;
- a version whose tag exists is checked file by file against the release; the same release is
  left as it is, and a release that differs is refused, with nothing written;
- the commit sends only files that differ from ``main`` (``huggingface_hub`` asks the Hub for the files'
  ids and skips unchanged ones) and removes files an earlier version left there, so ``main`` is the
  release; when a commit's reply is lost, ``main`` is read again and a commit that already holds the
  release is kept (a run again commits nothing: ``main`` already matches);
- after tagging, the tree at the tag is compared with the release, file by file (git blob ids, or the
  LFS sha256 for files the Hub stored in LFS), and ``manifest.json`` is downloaded and compared.

The Hub is reached with ``huggingface_hub``'s documented API (``HfApi``) at ``HF_ENDPOINT`` with
``HF_TOKEN``; it is imported only when publishing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Optional

from exports.release_files import MANIFEST, ReleaseError, read_manifest, verify_release

logger = logging.getLogger(__name__)

SCHEME = "hf://"
CARD = "card.md"
README = "README.md"
#: Data formats in the order the card's ``configs`` prefer them (types kept, no spreadsheet quoting).
PREFERRED_FORMATS = ("parquet", "jsonl", "csv")
SPLIT_NAMES = ("train", "val", "test", "valid", "validation")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_LICENSE = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


class HubPublishError(ReleaseError):
    """A release cannot be published to the Hub: a bad URL, the Hub refused, or the version differs."""


@dataclass(frozen=True)
class HubRepo:
    """A Hub dataset repository, ``OWNER/NAME``."""

    repo_id: str

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.repo_id}"


def is_hub_url(url: str) -> bool:
    return url.startswith(SCHEME)


def parse_hub_url(url: str) -> HubRepo:
    """Read ``hf://OWNER/NAME`` (``hf://datasets/OWNER/NAME`` is accepted too).

    Raises:
        HubPublishError: not of that form, or a name the Hub would not accept.
    """
    if not is_hub_url(url):
        raise HubPublishError(f"{url!r}: expected hf://OWNER/NAME")
    rest = url[len(SCHEME) :].strip("/")
    if rest.startswith("datasets/"):
        rest = rest[len("datasets/") :]
    parts = rest.split("/")
    if len(parts) != 2 or not all(_NAME.match(p) and ".." not in p and "--" not in p for p in parts):
        raise HubPublishError(f"{url!r}: expected hf://OWNER/NAME (letters, digits, '.', '_', '-')")
    return HubRepo("/".join(parts))


@dataclass
class HubPublished:
    """What :func:`publish_to_hub` did: the repository, the tag, the commit and the files sent."""

    url: str
    repo_id: str
    revision: str
    commit: str
    uploaded: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "repo": self.repo_id,
            "revision": self.revision,
            "commit": self.commit,
            "uploaded": len(self.uploaded),
            "skipped": self.unchanged,
            "already_published": self.skipped,
        }


def git_blob_id(data: bytes) -> str:
    """The git blob id (sha1 of ``blob <size>\\0`` + data) the Hub reports for a regular file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _data_configs(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """One config per folder holding split files (``default`` at the top), each split in the best format."""
    by_folder: dict[str, dict[str, dict[str, str]]] = {}
    for entry in manifest.get("files") or []:
        path = PurePosixPath(str(entry.get("path", "")))
        stem, ext = path.stem, path.suffix.lstrip(".")
        if stem in SPLIT_NAMES and ext in PREFERRED_FORMATS and len(path.parts) <= 2:
            folder = path.parts[0] if len(path.parts) == 2 else ""
            by_folder.setdefault(folder, {}).setdefault(stem, {})[ext] = str(path)
    configs = []
    for folder, splits in sorted(by_folder.items()):
        files = []
        for split in (s for s in SPLIT_NAMES if s in splits):
            ext = next(e for e in PREFERRED_FORMATS if e in splits[split])
            files.append({"split": split, "path": splits[split][ext]})
        configs.append({"config_name": folder or "default", "data_files": files})
    if configs and not any(c["config_name"] == "default" for c in configs):
        configs[0]["default"] = True
    return configs


def _yaml(meta: dict[str, Any]) -> str:
    """Block-style YAML of the card's metadata (strings JSON-quoted, which YAML reads as written)."""
    lines = []
    for key, value in meta.items():
        if isinstance(value, str):
            lines.append(f"{key}: {json.dumps(value)}")
        elif key == "configs":
            lines.append("configs:")
            for config in value:
                lines.append(f"- config_name: {json.dumps(config['config_name'])}")
                if config.get("default"):
                    lines.append("  default: true")
                lines.append("  data_files:")
                for entry in config["data_files"]:
                    lines.append(f"  - split: {json.dumps(entry['split'])}")
                    lines.append(f"    path: {json.dumps(entry['path'])}")
        else:
            lines.append(f"{key}:")
            lines.extend(f"- {json.dumps(item)}" for item in value)
    return "\n".join(lines) + "\n"


def hub_readme(release: Path, manifest: dict[str, Any]) -> bytes:
    """The repository's ``README.md``: YAML front matter (licence, configs) and the release's card."""
    license_id = str(manifest.get("license") or "").strip().lower()
    meta: dict[str, Any] = {
        "license": license_id if _LICENSE.match(license_id) else "other",
        "pretty_name": f"{manifest.get('name')} {manifest.get('version')}",
        "task_categories": ["question-answering"],
        "configs": _data_configs(manifest),
    }
    card_path = release / CARD
    card = card_path.read_text(encoding="utf-8") if card_path.exists() else f"# {meta['pretty_name']}\n"
    return f"---\n{_yaml(meta)}---\n\n{card}".encode()


def _release_files(release: Path, manifest: dict[str, Any]) -> dict[str, bytes]:
    """Every file the repository must hold for this release: the manifest's, the manifest, README.md."""
    files = {str(e["path"]): (release / str(e["path"])).read_bytes() for e in manifest["files"]}
    files[MANIFEST] = (release / MANIFEST).read_bytes()
    files[README] = hub_readme(release, manifest)
    return files


def _remote_tree(api: Any, repo_id: str, revision: str) -> dict[str, Any]:
    """path -> RepoFile at ``revision`` (files only)."""
    from huggingface_hub.hf_api import RepoFile

    entries = api.list_repo_tree(repo_id, repo_type="dataset", revision=revision, recursive=True)
    return {e.path: e for e in entries if isinstance(e, RepoFile)}


def _differences(remote: dict[str, Any], files: dict[str, bytes]) -> list[str]:
    """Paths whose remote copy is missing, extra or not byte-identical to ``files``."""
    wrong = sorted(set(remote) - set(files) - {".gitattributes"})
    for path, data in files.items():
        entry = remote.get(path)
        if entry is None:
            wrong.append(path)
        elif entry.lfs is not None:
            if entry.lfs.sha256 != hashlib.sha256(data).hexdigest():
                wrong.append(path)
        elif entry.blob_id != git_blob_id(data):
            wrong.append(path)
    return wrong


def _tag_of(api: Any, repo_id: str, tag: str) -> Optional[str]:
    refs = api.list_repo_refs(repo_id, repo_type="dataset")
    return next((t.target_commit for t in refs.tags if t.name == tag), None)


def _commit(api: Any, repo_id: str, files: dict[str, bytes], message: str) -> tuple[str, list[str]]:
    """Make ``main`` hold exactly ``files``; returns the commit and the paths sent.

    A commit whose reply was lost is found by reading ``main`` again: when it already holds the release
    nothing is sent twice.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    remote = _remote_tree(api, repo_id, "main")
    differing = set(_differences(remote, files))
    changed = [p for p in files if p in differing]
    stale = sorted(set(remote) - set(files) - {".gitattributes"})
    head = api.repo_info(repo_id, repo_type="dataset", revision="main").sha
    if not changed and not stale:
        return head, []
    operations: list[Any] = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=files[p]) for p in changed]
    operations += [CommitOperationDelete(path_in_repo=p) for p in stale]
    try:
        info = api.create_commit(
            repo_id,
            operations,
            commit_message=message,
            repo_type="dataset",
            revision="main",
            parent_commit=head,
        )
    except (HfHubHTTPError, OSError, _transport_errors()) as exc:
        logger.warning(
            "Hub %s: the commit's answer was lost or refused (%s); reading main again", repo_id, exc
        )
        if _differences(_remote_tree(api, repo_id, "main"), files):
            raise
        return api.repo_info(repo_id, repo_type="dataset", revision="main").sha, changed
    return info.oid, changed


def _transport_errors() -> type[Exception]:
    import httpx2

    return httpx2.TransportError


def _tag(api: Any, repo_id: str, tag: str, commit: str) -> None:
    """Tag ``commit`` as the version; a tag whose answer was lost is found by reading the refs again."""
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_tag(repo_id, tag=tag, revision=commit, repo_type="dataset", tag_message=f"Release {tag}")
    except (HfHubHTTPError, OSError, _transport_errors()) as exc:
        if _tag_of(api, repo_id, tag) != commit:
            raise
        logger.warning("Hub %s: tag %s was made though its answer was lost (%s)", repo_id, tag, exc)


def publish_to_hub(release: Path, repo: HubRepo, api: Any) -> HubPublished:
    """Publish a verified release to ``repo``, its version as a tag.

    Args:
        release: the release directory.
        repo: the dataset repository (created when missing).
        api: a ``huggingface_hub.HfApi`` (:func:`hub_api`).

    Returns:
        Where it is, the tag and commit, and the files this call sent.

    Raises:
        exports.release_files.ReleaseIntegrityError: the local release does not match its manifest.
        HubPublishError: the version's tag holds other files (nothing written), the Hub refused, or the
            tagged tree does not match the release after publishing.
    """
    from huggingface_hub.errors import HfHubHTTPError

    release = Path(release)
    verify_release(release)
    manifest = read_manifest(release)
    version = str(manifest["version"])
    files = _release_files(release, manifest)
    url = f"{api.endpoint.rstrip('/')}/datasets/{repo.repo_id}/tree/{version}"
    try:
        api.create_repo(repo.repo_id, repo_type="dataset", exist_ok=True)
        tagged = _tag_of(api, repo.repo_id, version)
        if tagged is not None:
            wrong = _differences(_remote_tree(api, repo.repo_id, version), files)
            if wrong:
                raise HubPublishError(
                    f"{repo.url} has version {version} already, with {len(wrong)} file(s) that differ from "
                    f"this release ({', '.join(wrong[:5])}); releases are immutable, publish a new version"
                )
            logger.info("Release %s %s is on %s already", manifest["name"], version, repo.url)
            return HubPublished(url, repo.repo_id, version, tagged, unchanged=len(files), skipped=True)
        message = f"Release {manifest['name']} {version}"
        commit, sent = _commit(api, repo.repo_id, files, message)
        _tag(api, repo.repo_id, version, commit)
        _check_published(api, repo, version, files)
    except HfHubHTTPError as exc:
        raise HubPublishError(f"{repo.url}: the Hub refused: {exc}") from exc
    logger.info(
        "Release %s %s published to %s at %s (%d file(s) sent)",
        manifest["name"],
        version,
        repo.url,
        commit,
        len(sent),
    )
    return HubPublished(url, repo.repo_id, version, commit, uploaded=sent, unchanged=len(files) - len(sent))


def _check_published(api: Any, repo: HubRepo, version: str, files: dict[str, bytes]) -> None:
    """Compare the tagged tree with the release, and the downloaded manifest with the local one."""
    import tempfile

    wrong = _differences(_remote_tree(api, repo.repo_id, version), files)
    if wrong:
        raise HubPublishError(
            f"{repo.url}@{version} does not match the release after publishing: {', '.join(wrong[:5])}"
        )
    with tempfile.TemporaryDirectory() as folder:
        path = api.hf_hub_download(
            repo.repo_id, MANIFEST, repo_type="dataset", revision=version, local_dir=folder
        )
        if Path(path).read_bytes() != files[MANIFEST]:
            raise HubPublishError(f"{repo.url}@{version}: manifest.json read back differs from the release's")


def hub_api() -> Any:
    """An ``HfApi`` for ``HF_ENDPOINT`` with ``HF_TOKEN``."""
    from django.conf import settings
    from huggingface_hub import HfApi

    return HfApi(endpoint=settings.HF_ENDPOINT, token=settings.HF_TOKEN or None)
