"""The release pages (exports/views.py) on small releases built from real SyllabusQA rows."""

from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from django.test import Client

from annotation.importers.syllabusqa_csv import read_split_csv, split_dir
from exports.card import CardInputs
from exports.models import Release
from exports.records import QARecord, qa_record_from_qa_row
from exports.release import build_release
from exports.services.releases import register_release
from tests.factories import make_researcher
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS

pytestmark = pytest.mark.django_db

SYLLABI = 12


def _records(root: Path) -> list[QARecord]:
    """The val.csv pairs of the first ``SYLLABI`` syllabi (in file order)."""
    rows = read_split_csv(split_dir(root) / "val.csv")
    names = list(dict.fromkeys(r.syllabus_name for r in rows))[:SYLLABI]
    return [qa_record_from_qa_row(r) for r in rows if r.syllabus_name in names]


def _release(records: list[QARecord], out: Path, version: str) -> Release:
    result = build_release(
        records,
        name="mini",
        version=version,
        out_dir=out,
        formats="csv,jsonl",
        seed=1,
        card_inputs=CardInputs(license="CC BY-NC-SA 4.0", description="A <b>small</b> slice."),
        privacy_allow=SYLLABUSQA_PUBLIC_CONTACTS,
    )
    return register_release(result.path)


@pytest.fixture
def releases(shared_data: Callable[[str], Path], tmp_path: Path) -> tuple[Release, Release, list[QARecord]]:
    """Version 1 and a version 2 with one pair removed and one answer edited (same splits kept)."""
    records = _records(shared_data("syllabusqa"))
    first = _release(records, tmp_path, "1")
    edited = replace(records[1], answer=records[1].answer + " (edited)")
    second = _release([edited, *records[2:]], tmp_path, "2")
    return first, second, records


@pytest.fixture
def staff(client: Client) -> Client:
    user = make_researcher("researcher")
    client.force_login(user)
    return client


def test_release_list__names_versions_counts_and_requires_staff(client: Client, releases) -> None:
    first, second, records = releases
    response = client.get("/releases/")
    assert response.status_code == 302 and "login" in response["Location"]
    client.force_login(make_researcher())
    html = client.get("/releases/").content.decode()
    for release in (first, second):
        assert f'href="/releases/{release.pk}/"' in html
        for count in release.counts.values():
            assert f'<td class="num">{count}</td>' in html
    assert sum(first.counts.values()) == len(records)


def test_release_detail__card_files_verify_and_links(staff: Client, releases) -> None:
    first, _, records = releases
    html = staff.get(f"/releases/{first.pk}/").content.decode()
    # Each pair is a row of the CSV, of the JSONL and of the authors' {split}.json.
    assert "verified" in html and f"{3 * len(records)} data rows" in html
    assert f'<img src="/releases/{first.pk}/files/plots/lengths.png" alt="lengths" />' in html
    # card HTML is escaped, not rendered
    assert '<table tabindex="0">' in html and "&lt;b&gt;small&lt;/b&gt;" in html
    assert f'href="/releases/{first.pk}/files/train.csv"' in html
    assert f'href="/releases/{first.pk}/files/manifest.json"' in html
    assert f'href="/benchmarks/release/{first.pk}/"' in html
    train_rows = sum(1 for _ in csv.DictReader((Path(first.path) / "train.csv").open(encoding="utf-8")))
    assert f'train.csv</a></td><td class="num">{train_rows}</td>' in html


def test_release_file__serves_listed_files_only(client: Client, staff: Client, releases) -> None:
    first, _, _ = releases
    root = Path(first.path)
    png = staff.get(f"/releases/{first.pk}/files/plots/types.png")
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert b"".join(png.streaming_content) == (root / "plots" / "types.png").read_bytes()
    data = staff.get(f"/releases/{first.pk}/files/test.jsonl")
    assert "attachment" in data["Content-Disposition"]
    assert b"".join(data.streaming_content) == (root / "test.jsonl").read_bytes()
    (root / "notes.txt").write_text("not in the manifest", encoding="utf-8")
    for bad in ("notes.txt", "../mini-2/train.csv", "plots/../card.md", "%2e%2e/%2e%2e/etc/passwd"):
        assert staff.get(f"/releases/{first.pk}/files/{bad}").status_code == 404, bad
    client.logout()
    assert client.get(f"/releases/{first.pk}/files/card.md").status_code == 404


def test_release_detail__tampered_file_shows_problems(staff: Client, releases) -> None:
    first, _, _ = releases
    with (Path(first.path) / "train.csv").open("a", encoding="utf-8") as handle:
        handle.write("forged,row\n")
    html = staff.get(f"/releases/{first.pk}/").content.decode()
    assert "1 problem" in html and "train.csv: sha256" in html


def test_release_detail__diff_against_older_version(staff: Client, releases) -> None:
    first, second, records = releases
    html = staff.get(f"/releases/{second.pk}/?against={first.pk}").content.decode()
    assert "From 1 to 2:" in html
    assert (
        f'<tr id="diff-removed"><td>removed</td><td class="num">1</td><td><code>{records[0].id}</code>'
        in html
    )
    assert (
        f'<tr id="diff-changed"><td>changed</td><td class="num">1</td><td><code>{records[1].id}</code>'
        in html
    )
    assert '<tr id="diff-added"><td>added</td><td class="num">0</td>' in html
    other = staff.get(f"/releases/{second.pk}/?against={second.pk}").content.decode()
    assert "no other release named &#x27;mini&#x27;" in other
