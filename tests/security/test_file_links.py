"""The download links of the console (exports.views.release_archive, evaluation.views.run_results) serve
only what belongs to the release or run, only to researchers, whatever the row or the manifest says."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.browser.test_release_pages_phone import release_and_run, syllabus_corpus
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def built(tmp_path: Path, settings: Any) -> tuple[Release, BenchmarkRun]:
    settings.CROWDQA_RELEASES_DIR = tmp_path / "releases"
    settings.VAR_DIR = tmp_path / "var"
    syllabus_corpus()
    return release_and_run(tmp_path)


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("r"))
    return client


def test_release_archive__packs_the_manifest_files_only(researcher: Client, built: tuple) -> None:
    release, _ = built
    root = Path(release.path)
    (root / "notes.txt").write_text("not listed", encoding="utf-8")
    response = researcher.get(f"/releases/{release.pk}/download.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert 'filename="phone-check-1.0.zip"' in response["Content-Disposition"]
    with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("phone-check-1.0/manifest.json"))
        assert archive.read("phone-check-1.0/test.csv") == (root / "test.csv").read_bytes()
    assert names == {"phone-check-1.0/manifest.json"} | {
        f"phone-check-1.0/{f['path']}" for f in manifest["files"]
    }
    assert "phone-check-1.0/notes.txt" not in names


def test_release_archive__anonymous_forged_manifest_and_symlink_refused(
    client: Client, researcher: Client, built: tuple, tmp_path: Path
) -> None:
    release, _ = built
    assert client.get(f"/releases/{release.pk}/download.zip").status_code == 404
    assert researcher.get("/releases/999999/download.zip").status_code == 404
    root = Path(release.path)
    secret = tmp_path / "secret.txt"
    secret.write_text("server secret", encoding="utf-8")
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"].append({"path": "../../secret.txt"})
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert researcher.get(f"/releases/{release.pk}/download.zip").status_code == 404
    manifest["files"][-1] = {"path": "link.txt"}
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (root / "link.txt").symlink_to(secret)
    response = researcher.get(f"/releases/{release.pk}/download.zip")
    assert response.status_code == 404 and b"server secret" not in response.content


def test_run_results__downloads_the_run_file_only(
    client: Client, researcher: Client, built: tuple, tmp_path: Path
) -> None:
    _, run = built
    response = researcher.get(f"/benchmarks/run/{run.pk}/results.json")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    assert json.loads(b"".join(response.streaming_content))["run"] == run.pk
    assert client.get(f"/benchmarks/run/{run.pk}/results.json").status_code == 404  # anonymous
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"secret": true}', encoding="utf-8")
    for forged in (
        str(outside),
        str(Path(run.results_path).parent / ".." / "elsewhere.json"),
        "",
        "/etc/passwd",
    ):
        BenchmarkRun.objects.filter(pk=run.pk).update(results_path=forged)
        assert researcher.get(f"/benchmarks/run/{run.pk}/results.json").status_code == 404, forged
    html = researcher.get(f"/benchmarks/run/{run.pk}/").content.decode()
    assert "results.json" not in html and str(tmp_path) not in html
