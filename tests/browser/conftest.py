"""Headless Chromium through Playwright against Django's live server.

Debian's Chromium is used (``playwright install`` downloads a browser and is never run; see
../shared/STACK.md). pytest-playwright's ``page`` fixture is used as is, with these launch arguments.
Screenshots of every HIT page go to ``$CROWDQA_ARTIFACTS_DIR`` (default ``var/test-artifacts``), which CI
keeps as test artifacts.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.signals import request_finished, request_started

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
    """A laptop screen (the HIT pages must work at 1366x768), asking for reduced motion.

    With reduced motion the pages switch notices (the syllabus page's toast) at once, so an axe audit
    never catches one half faded in, whose contrast depends on the moment it was taken.
    """
    return {**browser_context_args, "viewport": LAPTOP, "reduced_motion": "reduce"}


@pytest.fixture(autouse=True)
def no_options_only_check(settings: Any) -> None:
    """No SciQ options-only check after stage-2 submissions in browser tests (``off``).

    The pages' tests run Celery eagerly, inside the live server's request: the check would load SmolLM2
    there, far past a page's wait, and while it ran Celery's process-wide "no result.get() inside a task"
    flag would stay set for later tests that wait on a real worker. tests/evaluation/test_options_only.py
    covers the check itself.
    """
    settings.CROWDQA_OPTIONS_ONLY_MODEL = "off"


class _ServerRequests:
    """The live server's requests in flight, counted with Django's ``request_started`` and
    ``request_finished`` signals (sent in the server's threads)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._last = time.monotonic()

    def started(self, **kwargs: Any) -> None:
        with self._changed:
            self._running += 1
            self._last = time.monotonic()

    def finished(self, **kwargs: Any) -> None:
        with self._changed:
            self._running = max(0, self._running - 1)
            self._last = time.monotonic()
            self._changed.notify_all()

    def wait_quiet(self, quiet: float = 0.3, limit: float = 10.0) -> None:
        """Return once no request has run for ``quiet`` seconds (or after ``limit`` seconds)."""
        deadline = time.monotonic() + limit
        with self._changed:
            while time.monotonic() < deadline:
                idle = time.monotonic() - self._last
                if self._running == 0 and idle >= quiet:
                    return
                self._changed.wait(timeout=max(0.01, quiet - idle if self._running == 0 else 0.1))


@pytest.fixture(autouse=True)
def browser_requests_end_before_the_database_is_reset(request: pytest.FixtureRequest) -> Iterator[None]:
    """Close the test's browser contexts, and let the live server answer what their pages send as they
    close, before the test's database is reset.

    Why: a HIT page reports its active time when it is hidden or left (``sendBeacon`` on ``pagehide``)
    and saves its draft; closed by the fixtures' teardown, the pages sent those while pytest-django was
    emptying the database (one ``TRUNCATE`` of every table), and PostgreSQL chose one of the two as a
    deadlock victim: the test failed in its teardown. Closed here, set up after ``page`` and so torn down
    before it, their requests end while the test's database is as the test left it.
    """
    if "page" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("page").context.browser
    requests = _ServerRequests()
    request_started.connect(requests.started)
    request_finished.connect(requests.finished)
    try:
        yield
        for context in list(browser.contexts):
            context.close()
        requests.wait_quiet()
    finally:
        request_started.disconnect(requests.started)
        request_finished.disconnect(requests.finished)


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


PHONE = {"width": 390, "height": 844}
#: The two screens every HIT page is tried at.
SCREENS = {"phone": PHONE, "laptop": LAPTOP}


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical accessibility violations on the page as shown now.

    axe-core comes from the axe-playwright-python package (requirements.txt): a missing package fails
    the test at import, it never skips.
    """
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    found = []
    for violation in results.response["violations"]:
        if violation.get("impact") in ("serious", "critical"):
            targets = [" ".join(map(str, node["target"])) for node in violation["nodes"][:5]]
            found.append(f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}")
    return found


_OVERFLOW_JS = """() => {
    const root = document.documentElement, width = root.clientWidth, out = [];
    if (root.scrollWidth > width) out.push('page ' + root.scrollWidth);
    // Content of a box that scrolls sideways on its own (a wide table) does not widen the page.
    const inScrollBox = (el) => {
        for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
            const r = a.getBoundingClientRect();
            if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(a).overflowX)
                && r.right <= width + 1 && r.left >= -1) return true;
        }
        return false;
    };
    for (const el of document.querySelectorAll('body *')) {
        const r = el.getBoundingClientRect();
        if (!r.width || !r.height || (r.right <= width + 1 && r.left >= -1)) continue;
        if (getComputedStyle(el).position === 'fixed') continue;
        if (el.closest('.sr-only, .skip-link, dialog:not([open])')) continue;
        if (inScrollBox(el)) continue;
        const where = Math.round(r.left) + '-' + Math.round(r.right);
        out.push(el.tagName + '#' + el.id + '.' + el.className + ' ' + where);
    }
    return out.slice(0, 10);
}"""

_SMALL_TARGETS_JS = """(minimum) => {
    const out = [];
    const controls = 'button, input:not([type=hidden]), textarea, select, a[href]';
    for (const el of document.querySelectorAll(controls)) {
        const r = el.getBoundingClientRect();
        if (!r.width || !r.height || r.height >= minimum || ['checkbox', 'radio'].includes(el.type)) continue;
        // Links inside sentences are exempt (WCAG 2.5.5 "inline"); so are hidden and off-screen helpers.
        if (el.closest('.sr-only, .skip-link, dialog:not([open]), p')) continue;
        if (getComputedStyle(el).visibility === 'hidden') continue;
        out.push(el.tagName + '#' + el.id + '.' + el.className + ' ' + Math.round(r.height));
    }
    return out.slice(0, 10);
}"""


def overflow(page: Any) -> list[str]:
    """Visible elements wider than the screen (the page must never scroll sideways)."""
    return page.evaluate(_OVERFLOW_JS)


def small_targets(page: Any, minimum: int = 44) -> list[str]:
    """Visible buttons, fields and links smaller than ``minimum`` px high (touch targets)."""
    return page.evaluate(_SMALL_TARGETS_JS, minimum)


def tab_to(page: Any, selector: str, limit: int = 80, backwards: bool = False) -> None:
    """Press Tab (or Shift+Tab) until ``selector`` has the focus: the element is reachable by keyboard."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        if page.evaluate("(s) => !!document.activeElement && document.activeElement.matches(s)", selector):
            return
        page.keyboard.press(key)
    focused = page.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 120)")
    raise AssertionError(f"{selector} not reached with {limit} presses of {key}; focus is on {focused}")


def full_page_shot(page: Any, path: Path) -> None:
    """A full-page screenshot from the top (the sticky bar would otherwise cover the scrolled-to spot)."""
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(path), full_page=True)


def consent_and_close_instructions(page: Any) -> None:
    """Give consent, then close the instructions that open once after it (as a worker reading them does)."""
    from playwright.sync_api import expect

    page.wait_for_selector("input[name=consent]")
    page.check("input[name=consent]")
    page.get_by_role("button", name="Start the task").click()
    expect(page.locator("#help-dialog")).to_be_visible()
    page.get_by_role("button", name="Close instructions").click()
    expect(page.locator("#hit-form")).to_be_visible()
