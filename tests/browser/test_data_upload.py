"""Add data in headless Chromium with the real datasets' files: a researcher reaches the form by keyboard,
uploads SciQ's files without train.json (the job's page waits for a worker, then says which file is
missing, and "Upload again" brings the choices back), then all three real files (13,679 questions); on a
phone, a real syllabus PDF becomes a documents corpus. axe-core audited and nothing wider than a phone.
Screenshots: upload-form, upload-waiting, upload-refused, upload-done, upload-phone-done.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.models import Corpus, Job, QAPair
from annotation.services.uploads import JOB_KIND, run_upload
from tests.browser.conftest import LAPTOP, PHONE, full_page_shot, overflow, serious_violations, tab_to
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "pw-for-tests-upload"


def _audit(page: Page) -> None:
    assert serious_violations(page) == []
    size = page.viewport_size
    page.set_viewport_size(PHONE)
    assert overflow(page) == []
    page.set_viewport_size(size or LAPTOP)


def _sign_in(page: Page, base: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", "lab")
    page.fill("#id_password", PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def _run_latest_job() -> Job:
    """What a Celery worker does with the queued job (the test's worker is the test itself)."""
    job = Job.objects.filter(kind=JOB_KIND).latest("pk")
    return run_upload(job.pk)


def test_researcher_uploads_real_sciq_then_a_pdf_on_a_phone(
    live_server: Any, page: Page, browser: Any, artifacts_dir: Path, shared_data: Callable[[str], Path]
) -> None:
    make_researcher("lab", password=PASSWORD)
    sciq = shared_data("sciq")
    base = live_server.url
    _sign_in(page, base)
    tab_to(page, "#add-data")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Add data")).to_be_visible()
    _audit(page)
    full_page_shot(page, artifacts_dir / "upload-form.png")

    tab_to(page, "#id_layout")
    page.select_option("#id_layout", "sciq")
    tab_to(page, "#id_new_name")
    page.keyboard.type("sciq-lab")
    tab_to(page, "#upload-files")
    page.set_input_files("#upload-files", [str(sciq / "valid.json"), str(sciq / "test.json")])
    tab_to(page, "#upload-button")
    page.keyboard.press("Enter")
    expect(page.locator("#upload-stage")).to_contain_text("Waiting for a worker")
    _audit(page)
    full_page_shot(page, artifacts_dir / "upload-waiting.png")
    _run_latest_job()
    expect(page.locator("#upload-refused")).to_contain_text("train.json: file not found", timeout=15_000)
    expect(page.locator("#job-status")).to_have_text("Refused")
    _audit(page)
    full_page_shot(page, artifacts_dir / "upload-refused.png")
    assert not Corpus.objects.filter(name="sciq-lab").exists()

    tab_to(page, "#upload-refused a")
    page.keyboard.press("Enter")
    expect(page.locator("#id_layout")).to_have_value("sciq")
    expect(page.locator("#id_new_name")).to_have_value("sciq-lab")
    page.set_input_files(
        "#upload-files", [str(sciq / name) for name in ("train.json", "valid.json", "test.json")]
    )
    tab_to(page, "#upload-button")
    page.keyboard.press("Enter")
    expect(page.locator("#upload-stage")).to_be_visible()
    _run_latest_job()
    expect(page.locator("#upload-done")).to_contain_text(
        "13679 questions (13679 new, 0 unchanged)", timeout=15_000
    )
    _audit(page)
    full_page_shot(page, artifacts_dir / "upload-done.png")
    page.get_by_role("link", name="Open the corpus sciq-lab").click()
    expect(page.get_by_role("heading", name="sciq-lab")).to_be_visible()
    assert QAPair.objects.filter(corpus__name="sciq-lab").count() == 13679

    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    _sign_in(phone, base)
    phone.goto(f"{base}/corpora/upload/")
    pdf = next((shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "pdf").glob("1. Syllabus*.pdf"))
    tab_to(phone, "#id_new_name")
    phone.keyboard.type("phone-notes")
    phone.set_input_files("#upload-files", str(pdf))
    tab_to(phone, "#upload-button")
    phone.keyboard.press("Enter")
    expect(phone.locator("#upload-stage")).to_be_visible()
    _run_latest_job()
    expect(phone.locator("#upload-done")).to_contain_text("1 new document(s)", timeout=15_000)
    assert overflow(phone) == []
    assert serious_violations(phone) == []
    full_page_shot(phone, artifacts_dir / "upload-phone-done.png")
    corpus = Corpus.objects.get(name="phone-notes")
    assert corpus.documents.get().pdf and corpus.passages.count() > 5
    context.close()
