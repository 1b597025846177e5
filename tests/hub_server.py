"""A stand-in for the Hugging Face Hub's HTTP API on loopback, answering what ``huggingface_hub`` calls
to publish and read a dataset repository (as the MTurk and Prolific stand-ins answer boto3 and Prolific's
reference), so no test reaches the real Hub.

It keeps repositories in memory as git-like commits (each a full tree of path -> bytes) with branches and
tags, and answers: ``POST /api/repos/create`` (409 when it exists), ``POST /api/validate-yaml``,
``POST /api/datasets/{repo}/preupload/{rev}`` (every file ``regular``, with the ``oid`` of the file already
there so unchanged files are skipped), ``POST .../commit/{rev}`` (NDJSON: header, file, deletedFile;
``parentCommit`` checked), ``GET .../refs``, ``POST .../tag/{rev}`` (409 on an existing tag),
``GET .../revision/{rev}``, ``GET .../tree/{rev}[/path]`` and
``GET|HEAD /datasets/{repo}/resolve/{rev}/{path}``.

Files larger than ``lfs_over_bytes`` (off by default) go through Git LFS as on the Hub: preupload answers
``lfs`` (with the stored file's sha256 as its ``oid``), ``POST /datasets/{repo}.git/info/lfs/objects/batch``
hands out basic-transfer upload and verify actions (none for an object already stored), ``PUT
/lfs-upload/{oid}`` checks the sha256 of what it receives, ``POST /lfs-verify`` checks the object is there,
the commit's ``lfsFile`` lines point at stored objects, and the tree lists such files with ``lfs``
(sha256, size, pointer size) and the git id of their pointer file, as the Hub does.
``lose_next`` makes the server apply the next request of a kind and then drop the connection without
an answer (a reply lost on the way back).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import unquote, urlsplit

import pytest


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    """The Git LFS pointer file git stores in place of ``data``."""
    sha = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n".encode()


@dataclass
class Commit:
    oid: str
    parent: Optional[str]
    message: str
    files: dict[str, bytes]
    lfs: frozenset[str] = frozenset()  # the paths stored through LFS


@dataclass
class Repo:
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> Optional[Commit]:
        oid = self.branches.get(revision) or self.tags.get(revision) or revision
        return self.commits.get(oid)


@dataclass
class Hub:
    url: str = ""
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    lose_next: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    lfs_over_bytes: Optional[int] = None
    lfs_objects: dict[str, bytes] = field(default_factory=dict)  # sha256 -> content

    def commit_count(self, repo_id: str) -> int:
        return len(self.repos[repo_id].commits) - 1  # the repository's initial commit aside


def _empty_commit() -> Commit:
    return Commit(
        oid=hashlib.sha1(b"initial", usedforsecurity=False).hexdigest(),
        parent=None,
        message="initial",
        files={},
    )


def _handler(hub: Hub) -> type[BaseHTTPRequestHandler]:  # noqa: C901 - one small branch per endpoint
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

        def _send(
            self, status: int, body: Any = None, headers: Optional[dict[str, str]] = None, raw: bytes = b""
        ) -> None:
            data = raw if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header(
                "Content-Type", "application/json" if body is not None else "application/octet-stream"
            )
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _lost(self, kind: str) -> bool:
            """Drop the connection without an answer once for ``kind`` (after the change was made)."""
            with hub.lock:
                if kind in hub.lose_next:
                    hub.lose_next.discard(kind)
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return True
            return False

        def _repo_path(self, path: str) -> tuple[str, str, str]:
            """``/api/datasets/OWNER/NAME/ACTION/REST`` -> (repo id, action, rest)."""
            parts = path.split("/")
            repo_id = f"{parts[3]}/{parts[4]}"
            return repo_id, parts[5] if len(parts) > 5 else "", "/".join(parts[6:])

        @staticmethod
        def _tree_entry(path: str, data: bytes, lfs: bool) -> dict[str, Any]:
            if not lfs:
                return {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
            pointer = lfs_pointer(data)
            return {
                "type": "file",
                "path": path,
                "size": len(data),
                "oid": git_blob_sha1(pointer),
                "lfs": {
                    "oid": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                    "pointerSize": len(pointer),
                },
            }

        def do_PUT(self) -> None:  # noqa: N802
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path))
            body = self._body()
            oid = path.rpartition("/")[2]
            if not path.startswith("/lfs-upload/") or hashlib.sha256(body).hexdigest() != oid:
                return self._send(400, {"error": "the upload does not match its oid"})
            with hub.lock:
                hub.lfs_objects[oid] = body
            return self._send(200, {})

        def _lfs_batch(self, body: bytes) -> None:
            request = json.loads(body)
            objects = []
            for item in request["objects"]:
                row: dict[str, Any] = {"oid": item["oid"], "size": item["size"]}
                if item["oid"] not in hub.lfs_objects:
                    row["actions"] = {
                        "upload": {"href": f"{hub.url}/lfs-upload/{item['oid']}"},
                        "verify": {"href": f"{hub.url}/lfs-verify"},
                    }
                objects.append(row)
            return self._send(200, {"transfer": "basic", "objects": objects})

        def do_HEAD(self) -> None:  # noqa: N802
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path))
            if path.startswith("/datasets/") and "/resolve/" in path:
                head, _, rest = path[len("/datasets/") :].partition("/resolve/")
                repo = hub.repos.get(head)
                revision, _, file_path = rest.partition("/")
                commit = repo.resolve(revision) if repo else None
                if commit is None or file_path not in commit.files:
                    return self._send(404, {"error": "Entry not found"}, {"X-Error-Code": "EntryNotFound"})
                data = commit.files[file_path]
                lfs = file_path in commit.lfs
                etag = f'"{hashlib.sha256(data).hexdigest() if lfs else git_blob_sha1(data)}"'
                return self._send(200, None, {"ETag": etag, "X-Repo-Commit": commit.oid}, raw=data)
            if not path.startswith("/api/datasets/"):
                return self._send(404, {"error": "Not found"})
            repo_id, action, rest = self._repo_path(path)
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            if action == "refs":

                def ref(kind: str, name: str, oid: str) -> dict[str, str]:
                    return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}

                return self._send(
                    200,
                    {
                        "branches": [ref("heads", n, o) for n, o in repo.branches.items()],
                        "tags": [ref("tags", n, o) for n, o in repo.tags.items()],
                        "converts": [],
                        "pullRequests": [],
                    },
                )
            if action in ("revision", "tree"):
                revision, _, sub = rest.partition("/")
                commit = repo.resolve(revision)
                if commit is None:
                    return self._send(
                        404, {"error": "Revision not found"}, {"X-Error-Code": "RevisionNotFound"}
                    )
                if action == "revision":
                    siblings = [{"rfilename": p} for p in sorted(commit.files)]
                    return self._send(
                        200, {"id": repo_id, "sha": commit.oid, "siblings": siblings, "private": False}
                    )
                prefix = f"{sub.rstrip('/')}/" if sub else ""
                entries = [
                    self._tree_entry(p, d, p in commit.lfs)
                    for p, d in sorted(commit.files.items())
                    if p.startswith(prefix)
                ]
                return self._send(200, entries)
            return self._send(404, {"error": "Not found"})

        def do_POST(self) -> None:  # noqa: N802, C901
            path = unquote(urlsplit(self.path).path)
            hub.requests.append((self.command, path))
            body = self._body()
            if path == "/api/repos/create":
                payload = json.loads(body)
                repo_id = f"{payload.get('organization')}/{payload['name']}"
                if payload.get("type") != "dataset":
                    return self._send(400, {"error": "this stand-in holds dataset repositories only"})
                with hub.lock:
                    if repo_id in hub.repos:
                        return self._send(
                            409,
                            {
                                "error": "You already created this dataset repo",
                                "url": f"{hub.url}/datasets/{repo_id}",
                            },
                        )
                    first = _empty_commit()
                    hub.repos[repo_id] = Repo(commits={first.oid: first}, branches={"main": first.oid})
                return self._send(200, {"url": f"{hub.url}/datasets/{repo_id}", "name": repo_id})
            if path == "/api/validate-yaml":
                return self._send(200, {"errors": [], "warnings": []})
            if path.endswith(".git/info/lfs/objects/batch"):
                return self._lfs_batch(body)
            if path == "/lfs-verify":
                stored = hub.lfs_objects.get(json.loads(body)["oid"])
                return self._send(200 if stored is not None else 404, {})
            if not path.startswith("/api/datasets/"):
                return self._send(404, {"error": "Not found"})
            repo_id, action, revision = self._repo_path(path)
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._send(404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"})
            if action == "preupload":
                commit = repo.resolve(revision) or _empty_commit()
                files = []
                for entry in json.loads(body)["files"]:
                    there = commit.files.get(entry["path"])
                    lfs = hub.lfs_over_bytes is not None and entry["size"] > hub.lfs_over_bytes
                    mode = "lfs" if lfs else "regular"
                    row = {"path": entry["path"], "uploadMode": mode, "shouldIgnore": False}
                    if there is not None:
                        row["oid"] = hashlib.sha256(there).hexdigest() if lfs else git_blob_sha1(there)
                    files.append(row)
                return self._send(200, {"files": files, "commitOid": commit.oid})
            if action == "commit":
                lines = [json.loads(line) for line in body.splitlines() if line.strip()]
                header = next(item["value"] for item in lines if item["key"] == "header")
                with hub.lock:
                    head = repo.branches.get(revision)
                    if head is None:
                        return self._send(
                            404, {"error": "Branch not found"}, {"X-Error-Code": "RevisionNotFound"}
                        )
                    if header.get("parentCommit") and header["parentCommit"] != head:
                        return self._send(
                            412, {"error": "A commit has happened since. Please refresh and try again."}
                        )
                    files = dict(repo.commits[head].files)
                    lfs = set(repo.commits[head].lfs)
                    for item in lines:
                        value = item["value"]
                        if item["key"] == "file":
                            files[value["path"]] = base64.b64decode(value["content"])
                            lfs.discard(value["path"])
                        elif item["key"] == "deletedFile":
                            files.pop(value["path"], None)
                            lfs.discard(value["path"])
                        elif item["key"] == "lfsFile":
                            stored = hub.lfs_objects.get(value["oid"])
                            if stored is None:
                                return self._send(
                                    400, {"error": f"LFS object {value['oid']} was not uploaded"}
                                )
                            files[value["path"]] = stored
                            lfs.add(value["path"])
                    digest = hashlib.sha1(usedforsecurity=False)
                    digest.update(head.encode())
                    for p, d in sorted(files.items()):
                        digest.update(p.encode() + b"\0" + git_blob_sha1(d).encode())
                    digest.update(str(len(repo.commits)).encode())
                    commit = Commit(
                        digest.hexdigest(), head, header.get("summary", ""), files, frozenset(lfs)
                    )
                    repo.commits[commit.oid] = commit
                    repo.branches[revision] = commit.oid
                if self._lost("commit"):
                    return
                return self._send(
                    200,
                    {
                        "commitOid": commit.oid,
                        "commitUrl": f"{hub.url}/datasets/{repo_id}/commit/{commit.oid}",
                        "pullRequestUrl": None,
                    },
                )
            if action == "tag":
                tag = json.loads(body)["tag"]
                with hub.lock:
                    commit = repo.resolve(revision)
                    if commit is None:
                        return self._send(
                            404, {"error": "Revision not found"}, {"X-Error-Code": "RevisionNotFound"}
                        )
                    if tag in repo.tags:
                        return self._send(409, {"error": f"Tag {tag} already exists"})
                    repo.tags[tag] = commit.oid
                if self._lost("tag"):
                    return
                return self._send(200, {})
            return self._send(404, {"error": "Not found"})

    return Handler


@pytest.fixture
def hub() -> Iterator[Hub]:
    """A running stand-in Hub on 127.0.0.1; its URL is the ``endpoint`` to give ``HfApi``."""
    state = Hub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
