"""The researcher's journey continued in headless Chromium: export a release of the approved SciQ work from
the New release page (its validator's flag leaves the question out until she keeps every validated
question; then refused for its empty splits, then "Export anyway"), open it, and start a benchmark
from its leaderboard (multiple choice, on an OpenAI-compatible endpoint: the fake server of tests/fakes).
Screenshots: researcher-new-release, -export-flagged, -export-refused, -export-done, -release,
-start-benchmark, -run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.browser.conftest import LAPTOP, PHONE, full_page_shot, overflow, serious_violations
from tests.browser.test_researcher_journey import researcher_with_approved_batch  # noqa: F401 - fixture
from tests.fakes.fake_openai_server import FakeOpenAIServer, Reply

pytestmark = pytest.mark.django_db(transaction=True)


def test_researcher_exports_a_release_and_starts_a_benchmark(
    researcher_with_approved_batch: dict,  # noqa: F811 - the fixture imported above
    artifacts_dir: Path,
    settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings.CROWDQA_RELEASES_DIR = tmp_path / "releases"
    settings.VAR_DIR = tmp_path / "var"
    page: Page = researcher_with_approved_batch["page"]
    base = researcher_with_approved_batch["base"]
    batch = researcher_with_approved_batch["batch"]

    page.goto(f"{base}/releases/")
    page.click("#new-release")
    page.fill("#id_name", "crowd-sciq")
    page.fill("#id_version", "1.0")
    page.check("input[name=source][value=batches]")
    page.check(f"input[name=batches][value='{batch.pk}']")
    full_page_shot(page, artifacts_dir / "researcher-new-release.png")
    page.get_by_role("button", name="Export release").click()

    # Her validator flagged the one question (too_specific), so the default verdict leaves it out: the
    # page says so and how to keep it, and she goes back to keep every validated question.
    error = page.locator("#export-error")
    expect(error).to_contain_text("1 question was left out")
    expect(error).to_contain_text("Keep every validated question")
    full_page_shot(page, artifacts_dir / "researcher-export-flagged.png")
    assert serious_violations(page) == []
    page.set_viewport_size(PHONE)
    assert overflow(page) == []
    page.set_viewport_size(LAPTOP)
    error.get_by_role("link", name="Change the options").click()
    page.fill("#id_name", "crowd-sciq")
    page.fill("#id_version", "1.0")
    page.check("input[name=source][value=batches]")
    page.check(f"input[name=batches][value='{batch.pk}']")
    page.check("input[name=aggregation][value=none]")
    assert serious_violations(page) == []
    page.get_by_role("button", name="Export release").click()

    # One approved question: val and test would be empty, so nothing is written until she confirms.
    refused = page.locator("#export-refused")
    expect(refused).to_contain_text("Nothing was written")
    expect(refused).to_contain_text("the val split is empty")
    assert not Release.objects.exists()
    full_page_shot(page, artifacts_dir / "researcher-export-refused.png")
    page.get_by_role("button", name="Export anyway").click()
    done = page.locator("#export-done")
    expect(done).to_contain_text("crowd-sciq 1.0")
    expect(page.locator("#job-status")).to_have_text("Done")
    full_page_shot(page, artifacts_dir / "researcher-export-done.png")
    release = Release.objects.get()
    assert release.kind == "mcq" and release.counts == {"train": 1, "val": 0, "test": 0}

    done.get_by_role("link", name="crowd-sciq 1.0").click()
    expect(page.locator("main")).to_contain_text("# crowd-sciq 1.0".removeprefix("# "))
    full_page_shot(page, artifacts_dir / "researcher-release.png")

    with FakeOpenAIServer([Reply(text="A")]) as server:
        monkeypatch.setenv("LLM_API_BASE", server.api_base)
        monkeypatch.setenv("LLM_MODEL", "fake-model")
        page.goto(f"{base}/benchmarks/release/{release.pk}/")
        page.select_option("#id_split", "train")
        page.select_option("#id_model", "openai")
        full_page_shot(page, artifacts_dir / "researcher-start-benchmark.png")
        page.get_by_role("button", name="Start benchmark").click()
        expect(page.locator("main")).to_contain_text("Accuracy")
        assert len(server.requests) == 1
    run = BenchmarkRun.objects.get()
    assert (run.status, run.n_items, run.split, run.model_name) == ("done", 1, "train", "openai:fake-model")
    full_page_shot(page, artifacts_dir / "researcher-run.png")
    page.goto(f"{base}/benchmarks/release/{release.pk}/")
    expect(page.locator("table").first).to_contain_text("openai:fake-model")
