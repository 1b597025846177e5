"""Tests for exports/storage.py against a real S3 server on loopback (moto's, see tests/s3_server.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from exports.records import QARecord
from exports.release import build_release
from exports.release_files import ReleaseIntegrityError, read_manifest
from exports.storage import PublishError, S3Location, parse_s3_url, publish_release, s3_client

TARGET = S3Location("datasets", "releases")
PREFIX = "releases/demo-1/"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    records = [
        QARecord(
            id=f"q{i}",
            syllabus_name=f"s{i % 5}",
            question_type="single factual",
            question=f"When are office hours of course {i % 5}?",
            answer="Mondays at 2pm.",
            answer_spans=("Office hours: Mondays 2pm",),
        )
        for i in range(25)
    ]
    out = tmp_path_factory.mktemp("out")
    return build_release(records, name="demo", version="1", out_dir=out, formats="csv,parquet").path


@pytest.fixture
def release(built: Path, tmp_path: Path) -> Path:
    """A copy of the release that a test may alter."""
    return Path(shutil.copytree(built, tmp_path / built.name))


@pytest.fixture
def bucket(s3_server) -> object:
    client = s3_server.client()
    client.create_bucket(Bucket="datasets")
    return client


def _objects(client, prefix: str = PREFIX) -> dict[str, dict]:
    listed = client.list_objects_v2(Bucket="datasets", Prefix=prefix).get("Contents") or []
    return {entry["Key"]: entry for entry in listed}


def _release_files(release: Path) -> list[str]:
    return [entry["path"] for entry in read_manifest(release)["files"]] + ["manifest.json"]


def test_publish__every_file_byte_for_byte_with_its_sha256_manifest_last(release, bucket) -> None:
    published = publish_release(release, TARGET, s3_client())

    assert published.url == "s3://datasets/releases/demo-1/"
    files = _release_files(release)
    assert published.uploaded == [PREFIX + f for f in files]
    assert published.uploaded[-1] == PREFIX + "manifest.json"
    assert set(_objects(bucket)) == {PREFIX + f for f in files}
    checksums = {entry["path"]: entry["sha256"] for entry in read_manifest(release)["files"]}
    for relative in files:
        obj = bucket.get_object(Bucket="datasets", Key=PREFIX + relative)
        body = obj["Body"].read()
        assert body == (release / relative).read_bytes()
        if relative in checksums:
            assert hashlib.sha256(body).hexdigest() == checksums[relative]
        assert obj["Metadata"]["sha256"] == hashlib.sha256(body).hexdigest()
    assert bucket.head_object(Bucket="datasets", Key=PREFIX + "train.csv")["ContentType"].startswith(
        "text/csv"
    )


def test_publish__again_skips_every_identical_object(release, bucket) -> None:
    publish_release(release, TARGET, s3_client())
    before = {key: entry["LastModified"] for key, entry in _objects(bucket).items()}

    again = publish_release(release, TARGET, s3_client())

    assert again.uploaded == []
    assert again.skipped == [PREFIX + f for f in _release_files(release)]
    assert {key: entry["LastModified"] for key, entry in _objects(bucket).items()} == before


def test_publish__completes_an_interrupted_upload_manifest_last(release, bucket) -> None:
    publish_release(release, TARGET, s3_client())
    bucket.delete_object(Bucket="datasets", Key=PREFIX + "manifest.json")
    bucket.delete_object(Bucket="datasets", Key=PREFIX + "test.parquet")

    resumed = publish_release(release, TARGET, s3_client())

    assert resumed.uploaded == [PREFIX + "test.parquet", PREFIX + "manifest.json"]
    assert len(resumed.skipped) == len(_release_files(release)) - 2


def test_publish__identical_object_written_by_another_tool_is_skipped(release, bucket) -> None:
    """Without crowdqa's sha256 metadata the object's bytes are compared."""
    bucket.put_object(Bucket="datasets", Key=PREFIX + "card.md", Body=(release / "card.md").read_bytes())

    published = publish_release(release, TARGET, s3_client())

    assert published.skipped == [PREFIX + "card.md"]
    assert PREFIX + "card.md" not in published.uploaded


@pytest.mark.parametrize(
    "body", [b"id\nforged\n", None], ids=["other size", "same size, other bytes (no metadata)"]
)
def test_publish__a_differing_object_is_never_overwritten_and_nothing_is_uploaded(
    release, bucket, body
) -> None:
    original = (release / "val.csv").read_bytes()
    forged = body if body is not None else bytes(reversed(original))
    assert forged != original
    bucket.put_object(Bucket="datasets", Key=PREFIX + "val.csv", Body=forged)

    with pytest.raises(PublishError, match=r"1 object\(s\) that differ .*releases/demo-1/val.csv.*immutable"):
        publish_release(release, TARGET, s3_client())

    assert list(_objects(bucket)) == [PREFIX + "val.csv"]
    assert bucket.get_object(Bucket="datasets", Key=PREFIX + "val.csv")["Body"].read() == forged


def test_publish__a_differing_manifest_is_refused(release, bucket) -> None:
    publish_release(release, TARGET, s3_client())
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["created"] = "2000-01-01T00:00:00+00:00"
    (release / "manifest.json").write_text(json.dumps(manifest, indent=2))

    with pytest.raises(PublishError, match="manifest.json"):
        publish_release(release, TARGET, s3_client())


def test_publish__refuses_a_release_that_does_not_match_its_manifest(release, bucket) -> None:
    (release / "val.csv").write_text("id\nforged\n", encoding="utf-8")

    with pytest.raises(ReleaseIntegrityError, match="val.csv"):
        publish_release(release, TARGET, s3_client())

    assert _objects(bucket, "") == {}


def test_publish__no_such_bucket(release, s3_server) -> None:
    with pytest.raises(PublishError, match=r"s3://missing/releases/demo-1/: no bucket named 'missing'"):
        publish_release(release, S3Location("missing", "releases"), s3_client())


def test_publish__no_credentials(release, bucket, monkeypatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")

    with pytest.raises(
        PublishError, match=r"no AWS credentials for s3://datasets/releases/demo-1/.*AWS_ACCESS_KEY_ID"
    ):
        publish_release(release, TARGET, s3_client())


def test_publish__credentials_the_store_does_not_know(release, bucket, s3_server) -> None:
    s3_server.enforce_iam()
    s3_server.use_credentials("AKIAUNKNOWN000000000", "wrong")

    with pytest.raises(PublishError, match="rejected the AWS credentials .*InvalidAccessKeyId"):
        publish_release(release, TARGET, s3_client())


def test_publish__access_denied_for_a_read_only_user(release, bucket, s3_server) -> None:
    iam = s3_server.client("iam")
    iam.create_user(UserName="reader")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetObject"], "Resource": "*"}],
    }
    iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    s3_server.enforce_iam()
    s3_server.use_credentials(key["AccessKeyId"], key["SecretAccessKey"])

    with pytest.raises(
        PublishError,
        match=r"access denied while uploading releases/demo-1/\S+; the credentials need .*s3:PutObject",
    ):
        publish_release(release, TARGET, s3_client())


@pytest.mark.parametrize(
    ("url", "location"),
    [
        ("s3://datasets", S3Location("datasets", "")),
        ("s3://datasets/", S3Location("datasets", "")),
        ("s3://my.data-sets/a/b/", S3Location("my.data-sets", "a/b")),
    ],
)
def test_parse_s3_url(url: str, location: S3Location) -> None:
    assert parse_s3_url(url) == location


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://datasets/x", "expected s3://bucket/prefix"),
        ("s3://", "not a valid bucket name"),
        ("s3://Data_Sets/x", "not a valid bucket name"),
        ("s3://datasets/a/../b", r"'\.\.' parts"),
        ("s3://datasets/a//b", "empty"),
    ],
)
def test_parse_s3_url__refuses(url: str, message: str) -> None:
    with pytest.raises(PublishError, match=message):
        parse_s3_url(url)
