"""HEAD requests through gunicorn as deployed: answered, and nothing in gunicorn's log about them.

gunicorn 27 drops a body sent for a HEAD request and logs a warning for each one; an uptime probe that
sends HEAD every few seconds would fill the log (config/head_responses.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from tests.integration.test_slow_clients import _gunicorn

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_head_requests__answered_without_a_warning_in_gunicorn_s_log(tmp_path: Path) -> None:
    with _gunicorn(tmp_path) as url:
        for path in ("/health/", "/accounts/login/", "/static/crowdqa/hit.css", "/no/such/page/"):
            got = requests.get(url + path, timeout=10)
            head = requests.head(url + path, timeout=10)
            assert head.status_code == got.status_code and got.content and head.content == b"", path
    log = (tmp_path / "web.log").read_text()
    assert "Booting worker" in log  # the log is gunicorn's
    assert "no-body response" not in log
