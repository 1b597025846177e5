"""Headless Chromium through Playwright against Django's live server.

Debian's Chromium is used (``playwright install`` downloads a browser and is never run; see
../shared/STACK.md). pytest-playwright's ``page`` fixture is used as is, with these launch arguments.
Screenshots of every HIT page go to ``$CROWDQA_ARTIFACTS_DIR`` (default ``var/test-artifacts``), which CI
keeps as test artifacts.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from config.shared_data import require_shared_data

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run there unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAPTOP = {"width": 1366, "height": 768}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is a browser test."""
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch Debian's Chromium headless (pytest-playwright otherwise looks for its own download)."""
    if not Path(CHROMIUM).exists():
        message = "Chromium is not installed (scripts/setup.sh installs it as root)"
        if require_shared_data() or os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    """A laptop screen (the HIT pages must work at 1366x768)."""
    return {**browser_context_args, "viewport": LAPTOP}


@pytest.fixture
def artifacts_dir() -> Path:
    """Where screenshots go (kept by CI)."""
    path = Path(os.environ.get("CROWDQA_ARTIFACTS_DIR", Path(settings.BASE_DIR) / "var" / "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def screenshot(page: Any, artifacts_dir: Path) -> Callable[[str], Path]:
    """``screenshot("syllabus-hit")`` saves a full-page PNG of the current page and returns its path."""

    def take(name: str, full_page: bool = True) -> Path:
        path = artifacts_dir / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take
