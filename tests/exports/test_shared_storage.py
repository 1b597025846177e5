"""CROWDQA_STORAGE_URL: the setting fails closed, releases and the ranker go through the shared storage
(moto's S3 server on loopback) and come back verified, and a host never serves a changed copy.

Two "hosts" here are two ``CROWDQA_CACHE_DIR`` folders of one process; tests/integration/test_hosts.py
runs them as separate processes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import storages

from config.storage import (
    STORAGE_ALIAS,
    StorageURLError,
    local_media_path,
    parse_storage_url,
    shared_storage,
    storages_setting,
)
from exports.release_files import ReleaseError, ReleaseIntegrityError
from exports.release_store import RECENTLY_USED_SECONDS, prune_cache, release_root, store_release
from exports.services.releases import register_release
from tests.exports.test_releases_service import _release

pytestmark = pytest.mark.django_db
BUCKET = "lab-shared"


@pytest.fixture
def shared(s3_server, settings, tmp_path: Path):  # noqa: ANN001, ANN201
    """The settings of a host whose CROWDQA_STORAGE_URL names a bucket of the moto server."""
    s3_server.client().create_bucket(Bucket=BUCKET)
    url = f"s3://{BUCKET}/crowdqa"
    settings.CROWDQA_STORAGE_URL = url
    settings.STORAGES, settings.CROWDQA_STORAGE_ERROR = storages_setting(url, tmp_path / "var")
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-a" / "cache"
    return s3_server


@pytest.mark.parametrize(
    ("url", "bucket", "prefix"),
    [
        ("s3://lab/crowdqa", "lab", "crowdqa"),
        ("s3://lab.data/a/b/", "lab.data", "a/b"),
        ("s3://lab", "lab", ""),
    ],
)
def test_parse_storage_url__bucket_and_prefix(url: str, bucket: str, prefix: str) -> None:
    location = parse_storage_url(url)
    assert (location.bucket, location.prefix) == (bucket, prefix)
    assert location.key_of(location.url_of("releases/x")) == "releases/x"
    assert location.key_of("s3://other/releases/x") is None


@pytest.mark.parametrize(
    "url",
    ["lab/crowdqa", "https://lab/x", "s3://", "s3://UPPER/x", "s3://lab/../x", "s3://lab//x", "s3://a b/x"],
)
def test_parse_storage_url__malformed_refused(url: str) -> None:
    with pytest.raises(StorageURLError):
        parse_storage_url(url)


def test_malformed_storage_url__system_check_error_and_no_local_fallback(settings, tmp_path: Path) -> None:
    settings.STORAGES, settings.CROWDQA_STORAGE_ERROR = storages_setting("s3:/lab", tmp_path)
    settings.CROWDQA_STORAGE_URL = "s3:/lab"
    errors = [m for m in run_checks(tags=["crowdqa"]) if m.id == "crowdqa.E030"]
    assert len(errors) == 1 and "s3:/lab" in errors[0].msg
    with pytest.raises(ImproperlyConfigured):
        storages[STORAGE_ALIAS].save("benchmarks/1.json", ContentFile(b"{}"))
    with pytest.raises(ImproperlyConfigured):
        storages["default"].open("documents/a.pdf")
    assert not any(tmp_path.rglob("*.json"))


def test_no_storage_url__local_disk_and_no_check_error(settings, tmp_path: Path) -> None:
    settings.STORAGES, settings.CROWDQA_STORAGE_ERROR = storages_setting("", tmp_path)
    settings.CROWDQA_STORAGE_URL = ""
    assert not [m for m in run_checks(tags=["crowdqa"]) if m.id == "crowdqa.E030"]
    path = _release(tmp_path / "releases")
    assert store_release(path) is None
    release = register_release(path)
    assert release.path == str(path.resolve()) and release_root(release) == Path(release.path)


def test_stored_release__another_host_reads_a_verified_copy(shared, settings, tmp_path: Path) -> None:
    built = _release(tmp_path / "worker-releases")
    url = store_release(built)
    assert url == f"s3://{BUCKET}/crowdqa/releases/{built.name}"
    release = register_release(built, stored_at=url)
    assert release.path == url
    keys = {o["Key"] for o in shared.client().list_objects_v2(Bucket=BUCKET)["Contents"]}
    assert keys == {
        f"crowdqa/releases/{built.name}/{p.relative_to(built)}" for p in built.rglob("*") if p.is_file()
    }

    settings.CROWDQA_CACHE_DIR = tmp_path / "host-b" / "cache"
    copy = release_root(release)
    assert copy.is_relative_to(tmp_path / "host-b") and copy != built
    assert {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()} == {
        p.relative_to(built): p.read_bytes() for p in built.rglob("*") if p.is_file()
    }
    # The same release registered again (a retried export) keeps its row and its storage URL.
    assert register_release(built, stored_at=url).pk == release.pk


def test_stored_release__a_changed_object_is_refused_never_cached(shared, settings, tmp_path: Path) -> None:
    built = _release(tmp_path / "worker-releases")
    release = register_release(built, stored_at=store_release(built))
    data_key = next(
        o["Key"]
        for o in shared.client().list_objects_v2(Bucket=BUCKET)["Contents"]
        if o["Key"].endswith(".csv")
    )
    shared.client().put_object(Bucket=BUCKET, Key=data_key, Body=b"id,question\nforged,?\n")
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-c" / "cache"
    with pytest.raises(ReleaseIntegrityError):
        release_root(release)
    assert not [p for p in (tmp_path / "host-c").rglob("manifest.json")]

    manifest_key = f"crowdqa/releases/{built.name}/manifest.json"
    shared.client().put_object(Bucket=BUCKET, Key=manifest_key, Body=b"{}")
    with pytest.raises(ReleaseError, match="changed since it was registered"):
        release_root(release)


def test_stored_release__outside_this_hosts_storage_refused(shared, tmp_path: Path) -> None:
    built = _release(tmp_path / "worker-releases")
    release = register_release(built, stored_at=f"s3://another-bucket/releases/{built.name}")
    with pytest.raises(ReleaseError, match="outside this host's"):
        release_root(release)


def test_release_pages__a_stored_release_is_served_from_the_shared_storage(
    shared, settings, tmp_path: Path, client
) -> None:  # noqa: ANN001
    from django.urls import reverse

    from tests.factories import make_researcher

    built = _release(tmp_path / "worker-releases")
    release = register_release(built, stored_at=store_release(built))
    settings.CROWDQA_CACHE_DIR = tmp_path / "web" / "cache"
    client.force_login(make_researcher("r"))
    detail = client.get(reverse("exports:detail", args=[release.pk]))
    assert detail.status_code == 200 and detail.context["verify"]["ok"]
    csv_name = next(p.name for p in built.rglob("*.csv"))
    relative = str(next(built.rglob(csv_name)).relative_to(built))
    response = client.get(reverse("exports:file", args=[release.pk, relative]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == (built / relative).read_bytes()


def test_media__stored_in_s3_and_read_through_a_host_cache(shared, settings, tmp_path: Path) -> None:
    from annotation.models import Document
    from tests.factories import make_corpus

    document = Document.objects.create(corpus=make_corpus(name="c"), name="d", text="t")
    document.pdf.save("syllabus.pdf", ContentFile(b"%PDF-1.4 fake"), save=True)
    keys = [o["Key"] for o in shared.client().list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == [f"crowdqa/media/{document.pdf.name}"]
    path = local_media_path(Document.objects.get(pk=document.pk).pdf)
    assert path.is_relative_to(tmp_path / "host-a") and path.read_bytes() == b"%PDF-1.4 fake"


def _model_dir(root: Path, version: str, weights: bytes) -> Path:
    root.mkdir(parents=True)
    (root / "ranker.json").write_text(json.dumps({"model_version": version}), encoding="utf-8")
    (root / "forest.joblib").write_bytes(weights)
    (root / "candidates").mkdir()
    (root / "candidates" / "c.txt").write_text("heart\nliver\n", encoding="utf-8")
    return root


def test_ranker__published_by_one_host_fetched_by_another_and_replaced(
    shared, settings, tmp_path: Path
) -> None:
    from distractors import model_store

    settings.CROWDQA_MODEL_CHECK_SECONDS = 3600
    settings.CROWDQA_MODEL_DIR = tmp_path / "host-b" / "models"
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-b" / "cache"
    model_store._checked.update(at=float("-inf"), dir=None)
    assert model_store.current_model_dir() == tmp_path / "host-b" / "models" / "distractors"  # none yet

    first = model_store.publish_model(_model_dir(tmp_path / "host-a" / "m1", "v1", b"forest one"))
    served = model_store.current_model_dir()
    assert served.name == first and served.is_relative_to(tmp_path / "host-b" / "cache")
    assert (served / "candidates" / "c.txt").read_text(encoding="utf-8") == "heart\nliver\n"

    # Another host publishes a new version (same model_version, other weights): this process keeps its
    # copy until its check interval has passed, then serves the new one.
    version_two = model_store.publish_model(_model_dir(tmp_path / "host-a" / "m2", "v1", b"forest two"))
    assert version_two != first and version_two.startswith("v1-")
    model_store._checked.update(at=time.monotonic(), dir=served)  # as if this host had just looked
    assert model_store.current_model_dir() == served
    model_store._checked["at"] = float("-inf")
    assert model_store.current_model_dir().name == version_two


def test_ranker__a_changed_file_is_refused(shared, settings, tmp_path: Path) -> None:
    from distractors import model_store

    version = model_store.publish_model(_model_dir(tmp_path / "host-a" / "m", "v1", b"forest"))
    key = f"crowdqa/models/distractors/{version}/forest.joblib"
    shared.client().put_object(Bucket=BUCKET, Key=key, Body=b"tampered")
    settings.CROWDQA_CACHE_DIR = tmp_path / "host-b" / "cache"
    model_store._checked.update(at=float("-inf"), dir=None)
    with pytest.raises(model_store.ModelStoreError, match="sha256"):
        model_store.current_model_dir()
    assert not (tmp_path / "host-b" / "cache" / "models" / "distractors" / version).exists()


def test_store_release__again_is_a_no_op_and_another_release_of_that_folder_is_refused(
    shared, tmp_path: Path
) -> None:
    built = _release(tmp_path / "a")
    url = store_release(built)
    assert store_release(built) == url  # a retried job
    other = _release(tmp_path / "b", seed=7)  # same name and version, other split: another release
    assert other.name == built.name
    with pytest.raises(ReleaseError, match="same folder name"):
        store_release(other)
    stored = shared_storage().open(f"releases/{built.name}/manifest.json").read()
    assert stored == (built / "manifest.json").read_bytes()


def test_register_shared__a_local_release_named_by_a_command_is_stored_once(
    shared, settings, tmp_path
) -> None:
    from exports.services.releases import register_shared

    built = _release(tmp_path / "cli-host")
    release = register_shared(built)
    assert release.path == f"s3://{BUCKET}/crowdqa/releases/{built.name}"
    settings.CROWDQA_CACHE_DIR = tmp_path / "web" / "cache"
    assert register_shared(release_root(release)).pk == release.pk  # the web page passes its cached copy


def _stored(tmp_path: Path, version: str):  # noqa: ANN202
    built = _release(tmp_path / "worker-releases", version=version)
    return register_release(built, stored_at=store_release(built)), built


def _age(copy: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(copy, (then, then))


def test_release_cache__bounded_least_recently_used_removed_and_fetched_again(
    shared, settings, tmp_path: Path
) -> None:
    releases = [_stored(tmp_path, str(v))[0] for v in (1, 2, 3)]
    settings.CROWDQA_CACHE_DIR = tmp_path / "web-host" / "cache"
    settings.CROWDQA_CACHE_MAX_BYTES = 0  # unbounded while the first two are fetched
    first, second = release_root(releases[0]), release_root(releases[1])
    one = sum(p.stat().st_size for p in first.rglob("*") if p.is_file())
    settings.CROWDQA_CACHE_MAX_BYTES = 2 * one + one // 2  # two copies fit, three do not
    _age(first, 3600)
    _age(second, 1800)
    assert release_root(releases[1]) == second  # a use marks it recently used again
    _age(second, 1200)

    third = release_root(releases[2])

    assert not first.exists() and second.is_dir() and third.is_dir()  # the least recently used went
    assert not list(first.parent.glob(".pruned-*"))
    again = release_root(releases[0])  # read again: fetched and verified again
    assert again == first and (again / "manifest.json").is_file()
    assert not second.exists() and third.is_dir()  # now the second was the least recently used


def test_release_cache__a_copy_in_use_is_never_removed(shared, settings, tmp_path: Path) -> None:
    releases = [_stored(tmp_path, str(v))[0] for v in (1, 2)]
    settings.CROWDQA_CACHE_DIR = tmp_path / "web-host" / "cache"
    settings.CROWDQA_CACHE_MAX_BYTES = 1  # nothing fits
    first = release_root(releases[0])
    second = release_root(releases[1])  # the first was used a moment ago: it may be being read
    assert first.is_dir() and second.is_dir()
    _age(first, RECENTLY_USED_SECONDS + 1)
    assert prune_cache(1, keep=second) == [first] and second.is_dir()
    assert prune_cache(0) == []  # no bound


def test_release_file__signed_url_from_the_storage_when_configured(
    shared, settings, tmp_path: Path, client
) -> None:  # noqa: ANN001
    import urllib.parse

    import requests
    from django.urls import reverse

    from tests.factories import make_researcher

    release, built = _stored(tmp_path, "1")
    settings.CROWDQA_CACHE_DIR = tmp_path / "web" / "cache"
    settings.CROWDQA_SIGNED_URL_SECONDS = 60
    client.force_login(make_researcher("r"))
    relative = str(next(built.rglob("*.csv")).relative_to(built))

    response = client.get(reverse("exports:file", args=[release.pk, relative]))

    assert response.status_code == 302
    location = response["Location"]
    query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
    assert location.startswith(shared.endpoint) and query["X-Amz-Expires"] == ["60"]
    assert "X-Amz-Signature" in query and "attachment" in query["response-content-disposition"][0]
    downloaded = requests.get(location, timeout=30)
    assert downloaded.status_code == 200 and downloaded.content == (built / relative).read_bytes()
    assert not (tmp_path / "web").exists()  # nothing went through the web host's cache
    card = client.get(reverse("exports:file", args=[release.pk, "card.md"]))
    assert "inline" in urllib.parse.unquote(card["Location"])  # shown, as when streamed

    # Unlisted files, a changed object and a changed manifest get no URL.
    assert client.get(reverse("exports:file", args=[release.pk, "secret.csv"])).status_code == 404
    key = f"crowdqa/releases/{built.name}/{relative}"
    shared.client().put_object(Bucket=BUCKET, Key=key, Body=b"id,question\nforged,?\n")
    assert client.get(reverse("exports:file", args=[release.pk, relative])).status_code == 404
    manifest_key = f"crowdqa/releases/{built.name}/manifest.json"
    shared.client().put_object(Bucket=BUCKET, Key=manifest_key, Body=b"{}")
    assert client.get(reverse("exports:file", args=[release.pk, "manifest.json"])).status_code == 404
    client.logout()
    assert client.get(reverse("exports:file", args=[release.pk, relative])).status_code == 404
