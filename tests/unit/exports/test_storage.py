"""Tests for exports/storage.py (S3 through moto's in-process mock, no network)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from annotation.hashing import file_sha256
from exports.release import ReleaseError, ReleaseIntegrityError, build_release, read_manifest
from exports.storage import copy_release, s3_key, upload_release


@pytest.fixture(autouse=True)
def fake_aws_credentials(monkeypatch):
    """Dummy credentials so no test can reach AWS."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


@pytest.fixture
def release(make_qa, tmp_path):
    records = [make_qa(id=f"q{i}", syllabus_name=f"s{i % 5}") for i in range(25)]
    return build_release(
        records, name="demo", version="1", out_dir=tmp_path / "out", formats="csv,parquet"
    ).path


def test_upload_release__all_files_with_checksums_manifest_last(release):
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="datasets")
        keys = upload_release(release, client, bucket="datasets", prefix="/releases/demo-1/")
        manifest = read_manifest(release)
        assert keys[-1] == "releases/demo-1/manifest.json"
        assert len(keys) == len(manifest["files"]) + 1
        for entry in manifest["files"]:
            obj = client.get_object(Bucket="datasets", Key=s3_key("releases/demo-1", entry["path"]))
            assert obj["Body"].read() == (release / entry["path"]).read_bytes()
            assert obj["Metadata"]["sha256"] == entry["sha256"]
        with pytest.raises(ReleaseError, match="exists already"):
            upload_release(release, client, bucket="datasets", prefix="releases/demo-1")


def test_upload_release__refuses_a_tampered_release(release):
    (release / "val.csv").write_text("id\nforged\n", encoding="utf-8")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="datasets")
        with pytest.raises(ReleaseIntegrityError, match="val.csv"):
            upload_release(release, client, bucket="datasets", prefix="x")
        assert client.list_objects_v2(Bucket="datasets").get("KeyCount", 0) == 0


def test_copy_release__verified_copy_and_refuses_existing(release, tmp_path):
    copy = copy_release(release, tmp_path / "mirror")
    assert copy == tmp_path / "mirror" / release.name
    assert file_sha256(copy / "train.parquet") == file_sha256(release / "train.parquet")
    with pytest.raises(ReleaseError, match="exists already"):
        copy_release(release, tmp_path / "mirror")
