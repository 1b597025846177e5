"""How many threads a gunicorn worker runs (``threads`` in ``gunicorn.conf.py``), behind the proxy or not.

Behind the buffering reverse proxy of docs/deployment.md (``CROWDQA_BEHIND_PROXY``) requests arrive whole
and two threads per worker keep its core busy; with no proxy in front a trickling client holds a thread,
so the workers keep eight (``tests/integration/test_slow_clients.py``). A worker never takes more
connections than it has threads, and ``GUNICORN_THREADS`` wins over either default.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _conf(monkeypatch: pytest.MonkeyPatch, **environ: str) -> dict[str, Any]:
    for name in ("CROWDQA_BEHIND_PROXY", "GUNICORN_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(ROOT / "gunicorn.conf.py"))


@pytest.mark.parametrize(
    ("environ", "threads"),
    [
        ({}, 8),
        ({"CROWDQA_BEHIND_PROXY": ""}, 8),
        ({"CROWDQA_BEHIND_PROXY": "0"}, 8),
        ({"CROWDQA_BEHIND_PROXY": "no"}, 8),
        ({"CROWDQA_BEHIND_PROXY": "1"}, 2),
        ({"CROWDQA_BEHIND_PROXY": " True "}, 2),
        ({"GUNICORN_THREADS": ""}, 8),
        ({"GUNICORN_THREADS": "5"}, 5),
        ({"CROWDQA_BEHIND_PROXY": "1", "GUNICORN_THREADS": "8"}, 8),
        ({"CROWDQA_BEHIND_PROXY": "1", "GUNICORN_THREADS": "1"}, 1),
    ],
)
def test_threads__two_behind_the_proxy_eight_without_and_the_variable_wins(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], threads: int
) -> None:
    conf = _conf(monkeypatch, **environ)
    assert conf["worker_class"] == "gthread"
    assert conf["threads"] == threads
    assert conf["worker_connections"] == threads
    assert conf["keepalive"] == 0
