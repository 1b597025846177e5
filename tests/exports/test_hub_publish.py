"""Publishing a real SyllabusQA release to a Hugging Face Hub dataset repository, against the loopback
stand-in (tests/hub_server.py): files, card and manifest match the release, the version is a tag, a run
again or a retry after a lost reply makes no second commit, a changed version is refused, and
``datasets.load_dataset("OWNER/NAME")`` with ``HF_ENDPOINT`` at the stand-in reads the published splits."""

# ruff: noqa: F811 - the real-release fixtures are imported from tests/evaluation/conftest.py
from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from huggingface_hub import HfApi
from huggingface_hub import constants as hf_constants

from exports.hub import HubPublishError, HubRepo, git_blob_id, parse_hub_url, publish_to_hub
from exports.models import Release
from exports.release_files import read_manifest
from tests.evaluation.conftest import _benchmarks_in_tmp, small_release, trimmed_syllabusqa  # noqa: F401
from tests.hub_server import Hub
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS

pytestmark = pytest.mark.django_db

REPO = HubRepo("lab/syllabusqa-small")


@pytest.fixture
def api(hub: Hub) -> HfApi:
    return HfApi(endpoint=hub.url, token="hf_stand_in_token")


def _expected_paths(release: Path) -> set[str]:
    return {e["path"] for e in read_manifest(release)["files"]} | {"manifest.json", "README.md"}


def test_publish__files_card_manifest_and_tag(small_release: Path, hub: Hub, api: HfApi) -> None:
    published = publish_to_hub(small_release, REPO, api)
    repo = hub.repos[REPO.repo_id]
    assert published.revision == "1.0" and repo.tags == {"1.0": published.commit}
    tagged = repo.commits[published.commit].files
    assert set(tagged) == _expected_paths(small_release)
    for entry in read_manifest(small_release)["files"]:
        assert tagged[entry["path"]] == (small_release / entry["path"]).read_bytes()
    assert tagged["manifest.json"] == (small_release / "manifest.json").read_bytes()
    readme = tagged["README.md"].decode()
    assert readme.startswith("---\n") and 'path: "train.jsonl"' in readme
    assert readme.endswith((small_release / "card.md").read_text(encoding="utf-8"))
    assert hub.commit_count(REPO.repo_id) == 1
    assert ("GET", "/datasets/lab/syllabusqa-small/resolve/1.0/manifest.json") in hub.requests


def test_publish__again_changes_nothing(small_release: Path, hub: Hub, api: HfApi) -> None:
    first = publish_to_hub(small_release, REPO, api)
    second = publish_to_hub(small_release, REPO, api)
    assert second.skipped and second.commit == first.commit and hub.commit_count(REPO.repo_id) == 1


@pytest.mark.parametrize("lost", ["commit", "tag"])
def test_publish__a_lost_reply_makes_no_second_commit(
    small_release: Path,
    hub: Hub,
    api: HfApi,
    lost: str,
) -> None:
    hub.lose_next = {lost}
    published = publish_to_hub(small_release, REPO, api)
    assert hub.lose_next == set()  # the reply was indeed dropped
    repo = hub.repos[REPO.repo_id]
    assert hub.commit_count(REPO.repo_id) == 1 and repo.tags == {"1.0": published.commit}
    assert publish_to_hub(small_release, REPO, api).skipped and hub.commit_count(REPO.repo_id) == 1


def test_publish__a_changed_version_is_refused(small_release: Path, hub: Hub, api: HfApi) -> None:
    published = publish_to_hub(small_release, REPO, api)
    commit = hub.repos[REPO.repo_id].commits[published.commit]
    commit.files["train.csv"] = commit.files["train.csv"] + b"tampered,row\n"
    with pytest.raises(HubPublishError, match="immutable"):
        publish_to_hub(small_release, REPO, api)
    assert hub.commit_count(REPO.repo_id) == 1


def test_publish__a_new_version_replaces_main_and_keeps_the_old_tag(
    small_release: Path,
    hub: Hub,
    api: HfApi,
    tmp_path: Path,
) -> None:
    first = publish_to_hub(small_release, REPO, api)
    repo = hub.repos[REPO.repo_id]
    # an earlier version on main held a file this release does not have: the commit removes it
    repo.commits[repo.branches["main"]].files["old-only.txt"] = b"from an older version"
    repo.tags["1.0"] = first.commit
    manifest = json.loads((small_release / "manifest.json").read_text())
    copy = tmp_path / "syllabusqa-small-2.0"
    import shutil

    shutil.copytree(small_release, copy)
    manifest["version"] = "2.0"
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    second = publish_to_hub(copy, REPO, api)
    assert repo.tags == {"1.0": first.commit, "2.0": second.commit}
    assert "old-only.txt" not in repo.commits[second.commit].files
    assert hub.commit_count(REPO.repo_id) == 2


LOAD_FROM_HUB = """
import json, sys
import datasets
loaded = datasets.load_dataset(sys.argv[1], revision=sys.argv[2])
print(json.dumps({
    "rows": {split: loaded[split].num_rows for split in loaded},
    "columns": loaded["test"].column_names,
    "first_test_question": loaded["test"][0]["question"],
}))
"""


def test_load_dataset__resolves_owner_name_on_the_hub_given_by_hf_endpoint(
    small_release: Path,
    hub: Hub,
    api: HfApi,
    tmp_path: Path,
) -> None:
    """``load_dataset("OWNER/NAME", revision=VERSION)`` as a user runs it, with ``HF_ENDPOINT`` naming the
    stand-in: datasets and huggingface_hub read their endpoint when imported, so it runs in a fresh
    interpreter with that environment (and an empty cache), resolving the repository remotely."""
    publish_to_hub(small_release, REPO, api)
    before = len(hub.requests)
    loaded = _load_from_hub(hub, tmp_path)
    rows = {e["path"]: e["rows"] for e in read_manifest(small_release)["files"]}
    assert loaded["rows"] == {s: rows[f"{s}.jsonl"] for s in ("train", "val", "test")}
    assert "question" in loaded["columns"]
    first = json.loads((small_release / "test.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert loaded["first_test_question"] == first["question"]
    asked = hub.requests[before:]
    # the card was read at the tag, and the files fetched from the stand-in by the tag's commit
    assert ("GET", f"/datasets/{REPO.repo_id}/resolve/1.0/README.md") in asked
    tag_commit = hub.repos[REPO.repo_id].tags["1.0"]
    for split in ("train", "val", "test"):
        assert ("GET", f"/datasets/{REPO.repo_id}/resolve/{tag_commit}/{split}.jsonl") in asked


def _load_from_hub(hub: Hub, tmp_path: Path) -> dict[str, Any]:
    """Run LOAD_FROM_HUB on version 1.0 of REPO with ``HF_ENDPOINT`` at the stand-in; its printed JSON."""
    env = {
        **os.environ,
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_OFFLINE": "0",
        "HF_DATASETS_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", LOAD_FROM_HUB, REPO.repo_id, "1.0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_publish__large_files_go_through_lfs_and_are_checked_by_sha256(
    small_release: Path,
    hub: Hub,
    api: HfApi,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Files over the stand-in's LFS size go through the LFS batch API (upload, verify, ``lfsFile``);
    the check after publishing compares them by sha256; a second run uploads nothing; a changed LFS file
    under the tag is refused; ``load_dataset`` reads them back."""
    # huggingface_hub sends LFS files through Xet when hf_xet is installed; the stand-in speaks the
    # basic LFS transfer, which huggingface_hub uses without Xet
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    sizes = sorted(e["bytes"] for e in read_manifest(small_release)["files"])
    hub.lfs_over_bytes = sizes[len(sizes) // 2]
    published = publish_to_hub(small_release, REPO, api)
    tagged = hub.repos[REPO.repo_id].commits[published.commit]
    assert tagged.lfs and set(tagged.files) - tagged.lfs  # both kinds in one commit
    for path in tagged.lfs:
        assert tagged.files[path] == (small_release / path).read_bytes()
    uploads = [p for m, p in hub.requests if m == "PUT"]
    assert len(uploads) == len(tagged.lfs) and ("POST", "/lfs-verify") in hub.requests
    tree = {f.path: f for f in api.list_repo_tree(REPO.repo_id, repo_type="dataset", revision="1.0")}
    assert all(tree[p].lfs is not None for p in tagged.lfs)

    again = publish_to_hub(small_release, REPO, api)
    assert again.skipped and [p for m, p in hub.requests if m == "PUT"] == uploads

    loaded = _load_from_hub(hub, tmp_path)
    rows = {e["path"]: e["rows"] for e in read_manifest(small_release)["files"]}
    assert loaded["rows"] == {s: rows[f"{s}.jsonl"] for s in ("train", "val", "test")}

    changed = sorted(tagged.lfs)[0]
    tagged.files[changed] = tagged.files[changed] + b"\n"  # the same size class, another sha256
    with pytest.raises(HubPublishError, match=changed):
        publish_to_hub(small_release, REPO, api)


@pytest.mark.parametrize(
    "url", ["hf://", "hf://lab", "hf://lab/a/b", "hf://lab/../x", "hf://la b/x", "s3://x/y"]
)
def test_parse_hub_url__refuses_bad_urls(url: str) -> None:
    with pytest.raises(HubPublishError):
        parse_hub_url(url)


def test_parse_hub_url__accepts_owner_name() -> None:
    assert parse_hub_url("hf://lab/syllabusqa-v1").repo_id == "lab/syllabusqa-v1"
    assert parse_hub_url("hf://datasets/lab/x").repo_id == "lab/x"


def test_git_blob_id__is_gits() -> None:
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_export_release_command__publishes_the_built_release(
    small_release: Path,
    hub: Hub,
    settings,
    tmp_path: Path,
) -> None:
    settings.HF_ENDPOINT = hub.url
    settings.HF_TOKEN = "hf_stand_in_token"
    allow = [arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)]
    out = StringIO()
    call_command(
        "export_release",
        *("--name", "syllabusqa-small", "--version", "1.0", "--out", str(small_release.parent)),
        *("--corpus", "syllabusqa", "--use-original-splits", "--formats", "csv,jsonl", "--sync"),
        *("--publish", "hf://lab/syllabusqa-small"),
        *allow,
        stdout=out,
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (
        summary["published"]["repo"] == "lab/syllabusqa-small" and summary["published"]["revision"] == "1.0"
    )
    release = Release.objects.get(name="syllabusqa-small", version="1.0")
    assert release.published_url == f"{hub.url}/datasets/lab/syllabusqa-small/tree/1.0"
    assert set(
        hub.repos["lab/syllabusqa-small"].commits[summary["published"]["commit"]].files
    ) == _expected_paths(small_release)
