"""The release page, its leaderboard and a run page fit a phone and show files as links, not server paths.

A syllabus corpus of ten documents is exported (train / val / test) and benchmarked with the search
baseline on ``test``; a signed-in researcher opens the three pages at 390 px and at laptop width:
nothing scrolls sideways, axe-core finds no serious violation, no page shows the server's folders, and
the release (.zip) and the run's per-item results (.json) download from their links.
"""

from __future__ import annotations

import json
import zipfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from annotation import question_types as qt
from annotation.models import QAPair
from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.browser.conftest import SCREENS, overflow, serious_violations
from tests.factories import make_corpus, make_document, make_researcher

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "pw-for-tests-phone"


def syllabus_corpus(documents: int = 10) -> None:
    corpus = make_corpus(name="syl")
    for d in range(documents):
        text = f"Course {d} meets on Mondays. Office hours are on day {d} in room {100 + d}."
        doc = make_document(corpus, name=f"syllabus-{d}", text=text, page_starts=[0])
        for i, question_type in enumerate(qt.SYLLABUS_TYPES[:3]):
            QAPair.objects.create(
                corpus=corpus,
                document=doc,
                question_type=question_type,
                question=f"When are the office hours of course {d} ({i})?",
                answer=f"Office hours are on day {d}.",
                status=QAPair.Status.ACCEPTED,
            )


def release_and_run(tmp_path: Path) -> tuple[Release, BenchmarkRun]:
    out = StringIO()
    call_command(
        "export_release",
        *("--name", "phone-check", "--version", "1.0", "--out", str(tmp_path / "releases")),
        *("--corpus", "syl", "--formats", "csv,jsonl", "--sync"),
        stdout=out,
    )
    path = json.loads(out.getvalue().strip().splitlines()[-1])["path"]
    call_command(
        "run_benchmark",
        *("--release", path, "--system", "search", "--split", "test", "--metrics", "rougeL", "--sync"),
        stdout=StringIO(),
    )
    return Release.objects.get(), BenchmarkRun.objects.get()


def test_release_leaderboard_and_run__fit_a_phone_and_link_their_files(
    live_server: Any, page: Page, tmp_path: Path, settings: Any
) -> None:
    settings.CROWDQA_RELEASES_DIR = tmp_path / "releases"
    settings.VAR_DIR = tmp_path / "var"
    syllabus_corpus()
    release, run = release_and_run(tmp_path)
    assert run.status == BenchmarkRun.Status.DONE, run.error
    assert all(release.counts[split] > 0 for split in ("train", "val", "test"))
    make_researcher("rosa", password=PASSWORD)
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "rosa")
    page.fill("#id_password", PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    pages = {
        "release": f"/releases/{release.pk}/",
        "leaderboard": f"/benchmarks/release/{release.pk}/",
        "run": f"/benchmarks/run/{run.pk}/",
        "benchmarks": "/benchmarks/",
    }
    problems: dict[str, list[str]] = {}
    for screen, size in SCREENS.items():
        page.set_viewport_size(size)
        for name, path in pages.items():
            page.goto(base + path)
            found = serious_violations(page) + overflow(page)
            if str(tmp_path) in page.locator("body").inner_text():
                found.append("shows a server path")
            if found:
                problems[f"{screen} {name}"] = found
    assert problems == {}

    page.goto(base + pages["run"])
    expect(page.locator("#figures")).to_contain_text("ROUGE-L F1")
    expect(page.locator("#parameters")).to_contain_text("MetricsROUGE-L")
    with page.expect_download() as info:
        page.locator("#results-download").click()
    results = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    assert results["run"] == run.pk

    page.goto(base + pages["release"])
    with page.expect_download() as info:
        page.locator("#release-download").click()
    with zipfile.ZipFile(info.value.path()) as archive:
        names = archive.namelist()
    assert "phone-check-1.0/manifest.json" in names
    assert any(n.endswith("test.csv") for n in names)
