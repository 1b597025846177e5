"""exports/services/releases.py: the release catalogue refuses to overwrite and follows copies and moves."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from exports.models import Release
from exports.records import QARecord
from exports.release import build_release
from exports.release_files import ReleaseError
from exports.services.releases import register_release

pytestmark = pytest.mark.django_db


def _release(out: Path, name: str = "demo", version: str = "1", seed: int = 0) -> Path:
    records = [
        QARecord(
            id=f"q{i}",
            syllabus_name=f"s{i % 5}",
            question_type="single factual",
            question=f"When is exam {i}?",
            answer=f"Week {i}.",
        )
        for i in range(20)
    ]
    return build_release(records, name=name, version=version, out_dir=out, formats="csv", seed=seed).path


def test_register_release__twice_same_row_and_fields_from_manifest(tmp_path: Path) -> None:
    path = _release(tmp_path)
    first = register_release(path)
    assert register_release(str(path)).pk == first.pk
    assert (first.name, first.version, first.kind, first.path) == ("demo", "1", "qa", str(path.resolve()))
    assert sum(first.counts.values()) == 20 and first.seed == 0
    assert Release.objects.count() == 1


def test_register_release__changed_manifest_at_same_path_refused(tmp_path: Path) -> None:
    path = _release(tmp_path)
    register_release(path)
    manifest = path / "manifest.json"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace('"seed": 0', '"seed": 1'), "utf-8")
    with pytest.raises(ReleaseError, match="manifest.json changed since Release"):
        register_release(path)


def test_register_release__same_name_version_other_manifest_refused_not_overwritten(tmp_path: Path) -> None:
    original = register_release(_release(tmp_path / "a"))
    other = _release(tmp_path / "b", seed=5)
    with pytest.raises(ReleaseError, match=r"demo 1 is registered already as Release\(\d+\) .* different"):
        register_release(other)
    original.refresh_from_db()
    assert original.path == str((tmp_path / "a" / "demo-1").resolve())
    assert Release.objects.count() == 1


def test_register_release__copy_keeps_original_row_and_move_follows(tmp_path: Path) -> None:
    path = _release(tmp_path / "a")
    row = register_release(path)
    copy = tmp_path / "mirror" / "demo-1"
    shutil.copytree(path, copy)
    assert register_release(copy).pk == row.pk
    row.refresh_from_db()
    assert row.path == str(path.resolve())
    shutil.rmtree(path)
    moved = register_release(copy)
    assert moved.pk == row.pk and moved.path == str(copy.resolve())
    assert Release.objects.count() == 1


def test_register_release__not_a_release(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="not a release"):
        register_release(tmp_path)
