"""export_release --publish: a release of real SciQ questions published to a real S3 server on loopback
(moto's, tests/s3_server.py), published again idempotently, never overwriting a differing object, and
clear errors (no bucket, no credentials, a bad URL) that leave the built release ready to publish."""

from __future__ import annotations

import hashlib
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Job
from config.storage import storages_setting
from exports.models import Release

pytestmark = pytest.mark.django_db

SAMPLE = 12


@pytest.fixture
def sciq_sample(shared_data, tmp_path: Path) -> Path:
    """The first questions of each real SciQ split, imported as corpus ``sciq``."""
    root = shared_data("sciq")
    sample = tmp_path / "sciq"
    sample.mkdir()
    for name in ("train.json", "valid.json", "test.json"):
        items = json.loads((root / name).read_text(encoding="utf-8"))[:SAMPLE]
        (sample / name).write_text(json.dumps(items), encoding="utf-8")
    call_command("import_sciq", str(sample), stdout=StringIO())
    return sample


def _export(tmp_path: Path, *args: str) -> dict:
    out = StringIO()
    call_command(
        "export_release",
        "--sync",
        "--name",
        "sciq-sample",
        "--version",
        "1.0",
        "--out",
        str(tmp_path / "out"),
        "--corpus",
        "sciq",
        "--use-original-splits",
        *args,
        stdout=out,
    )
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _objects(client, prefix: str) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket="datasets", Prefix=prefix).get("Contents") or []
    return {
        entry["Key"][len(prefix) :]: client.get_object(Bucket="datasets", Key=entry["Key"])["Body"].read()
        for entry in listed
    }


def test_publish__every_file_then_again_idempotently(sciq_sample, s3_server, tmp_path: Path) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="datasets")

    summary = _export(tmp_path, "--publish", "s3://datasets/releases")

    release = Path(summary["path"])
    manifest = json.loads((release / "manifest.json").read_text(encoding="utf-8"))
    assert summary["counts"] == {"train": SAMPLE, "val": SAMPLE, "test": SAMPLE}
    assert summary["published"] == {
        "url": "s3://datasets/releases/sciq-sample-1.0/",
        "uploaded": len(manifest["files"]) + 1,
        "skipped": 0,
    }
    stored = _objects(client, "releases/sciq-sample-1.0/")
    local = {str(p.relative_to(release)): p.read_bytes() for p in release.rglob("*") if p.is_file()}
    assert stored == local
    assert {"sciq/test.json", "multiple_choice/train.parquet", "direct_answer/val.csv"} <= set(stored)
    for entry in manifest["files"]:
        assert hashlib.sha256(stored[entry["path"]]).hexdigest() == entry["sha256"]
    row = Release.objects.get(pk=summary["release_id"])
    assert row.published_url == "s3://datasets/releases/sciq-sample-1.0/"

    again = _export(tmp_path, "--publish", "s3://datasets/releases")

    assert again["published"] == {**summary["published"], "uploaded": 0, "skipped": len(stored)}
    assert again["release_id"] == summary["release_id"] and Release.objects.count() == 1
    assert json.loads((release / "manifest.json").read_text(encoding="utf-8")) == manifest  # not rebuilt
    assert _objects(client, "releases/sciq-sample-1.0/") == stored


def test_publish__a_differing_object_is_refused_and_left_alone(sciq_sample, s3_server, tmp_path) -> None:
    client = s3_server.client()
    client.create_bucket(Bucket="datasets")
    client.put_object(Bucket="datasets", Key="mirror/sciq-sample-1.0/card.md", Body=b"# another card\n")

    with pytest.raises(CommandError, match=r"differ from this release .*mirror/sciq-sample-1.0/card.md"):
        _export(tmp_path, "--publish", "s3://datasets/mirror")

    assert _objects(client, "mirror/") == {"sciq-sample-1.0/card.md": b"# another card\n"}
    assert Release.objects.get().published_url == ""


def test_publish__no_bucket_then_published_by_the_same_command(sciq_sample, s3_server, tmp_path) -> None:
    with pytest.raises(
        CommandError, match=r"no bucket named 'datasets' \(the release is written at .*Release\("
    ):
        _export(tmp_path, "--publish", "s3://datasets/releases")
    release = Release.objects.get()
    built = json.loads((Path(release.path) / "manifest.json").read_text(encoding="utf-8"))
    assert Job.objects.get().status == Job.Status.FAILED

    s3_server.client().create_bucket(Bucket="datasets")
    summary = _export(tmp_path, "--publish", "s3://datasets/releases")

    assert summary["release_id"] == release.pk and summary["published"]["skipped"] == 0
    assert json.loads((Path(release.path) / "manifest.json").read_text(encoding="utf-8")) == built
    release.refresh_from_db()
    assert release.published_url == "s3://datasets/releases/sciq-sample-1.0/"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def host_a(sciq_sample, s3_server, settings, tmp_path: Path):  # noqa: ANN001, ANN201
    """Host A of a lab sharing a storage bucket: its export is built, stored and registered, and its
    publishing fails (no bucket 'datasets' yet); then host A's folder is gone from the disk the next
    export runs on (another host's, which never saw it). Returns the catalogue row and host A's files."""
    client = s3_server.client()
    client.create_bucket(Bucket="lab-shared")
    url = "s3://lab-shared/crowdqa"
    settings.CROWDQA_STORAGE_URL = url
    settings.STORAGES, settings.CROWDQA_STORAGE_ERROR = storages_setting(url, tmp_path / "var")
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-a" / "cache"
    with pytest.raises(CommandError, match=r"no bucket named 'datasets'"):
        _export(tmp_path, "--publish", "s3://datasets/releases")
    release = Release.objects.get()
    assert release.path == f"{url}/releases/sciq-sample-1.0" and release.published_url == ""
    built = tmp_path / "out" / "sciq-sample-1.0"
    files = _tree(built)
    built.rename(tmp_path / "host-a-disk")
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-b" / "cache"
    client.create_bucket(Bucket="datasets")
    return release, files


def test_publish__a_release_built_on_another_host_is_published_from_the_shared_storage(
    host_a,
    s3_server,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    release, files = host_a

    summary = _export(tmp_path, "--publish", "s3://datasets/releases")  # on host B

    assert summary["release_id"] == release.pk and Release.objects.count() == 1
    assert summary["published"]["uploaded"] == len(files)
    assert not (tmp_path / "out" / "sciq-sample-1.0").exists()  # not built again on host B
    assert _objects(s3_server.client(), "releases/sciq-sample-1.0/") == files  # host A's bytes
    (copy,) = (tmp_path / "host-b" / "cache" / "releases").glob("sciq-sample-1.0-*")
    assert _tree(copy) == files  # the verified copy it published from
    release.refresh_from_db()
    assert release.published_url == "s3://datasets/releases/sciq-sample-1.0/"
    assert Job.objects.order_by("-pk").first().result["written"] == str(
        (tmp_path / "out" / "sciq-sample-1.0").resolve()
    )


def test_publish__a_build_changed_in_the_shared_storage_is_refused(
    host_a,
    s3_server,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    client = s3_server.client()
    key = "crowdqa/releases/sciq-sample-1.0/direct_answer/val.csv"
    client.put_object(Bucket="lab-shared", Key=key, Body=b"id,question\nforged,?\n")

    with pytest.raises(CommandError, match=r"integrity problem.*direct_answer/val.csv"):
        _export(tmp_path, "--publish", "s3://datasets/releases")

    assert _objects(client, "releases/") == {} and Release.objects.get().published_url == ""
    assert not (tmp_path / "out" / "sciq-sample-1.0").exists()  # neither built again
    assert not list((tmp_path / "host-b").rglob("manifest.json"))  # nor cached


def test_publish__no_credentials(sciq_sample, s3_server, tmp_path, monkeypatch) -> None:
    s3_server.client().create_bucket(Bucket="datasets")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")

    with pytest.raises(CommandError, match="no AWS credentials for s3://datasets/releases/sciq-sample-1.0/"):
        _export(tmp_path, "--publish", "s3://datasets/releases")


def test_publish__a_bad_url_is_refused_before_anything_runs(sciq_sample, tmp_path) -> None:
    with pytest.raises(CommandError, match="'datasets/releases': expected s3://bucket/prefix"):
        _export(tmp_path, "--publish", "datasets/releases")
    assert not Job.objects.exists()


def test_an_export_without_publish_still_refuses_a_taken_version(sciq_sample, tmp_path) -> None:
    _export(tmp_path)
    with pytest.raises(CommandError, match="registered already"):
        _export(tmp_path)
