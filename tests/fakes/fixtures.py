"""Reusable pytest fixtures for crowd-platform tests (unit and integration).

Import the ones you need in a ``conftest.py``::

    from tests.fakes.fixtures import aws_credentials, fake_mturk_server, fake_prolific_server  # noqa: F401

``aws_credentials`` sets dummy AWS credentials (and hides the user's AWS config) so no test can reach
AWS; ``fake_mturk_server`` also sets ``AWS_ENDPOINT_URL_MTURK`` to the fake, so
``mturk_api.make_client()`` talks to it with no other change.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from crowd.providers.mturk import api as mturk_api
from crowd.providers.prolific.api import ProlificClient
from tests.fakes.fake_mturk_server import FakeMTurkServer
from tests.fakes.fake_prolific_server import FakeProlificServer

RESPONSES = Path(__file__).parent / "responses"


_TIME_KEYS = ("Time", "Expiration", "Deadline")


def _with_datetimes(value: Any, key: str = "") -> Any:
    """Turn MTurk ISO time strings into datetimes, as a real boto3 client returns them."""
    if isinstance(value, dict):
        return {k: _with_datetimes(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_datetimes(v, key) for v in value]
    if isinstance(value, str) and key.endswith(_TIME_KEYS) and value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def load_response(name: str, **overrides: Any) -> dict[str, Any]:
    """Load ``responses/<name>.json`` and override top-level keys (MTurk times become datetimes).

    Args:
        name: path under ``responses/`` without ``.json`` (``mturk/create_hit_type``).
        **overrides: top-level keys to replace.

    Returns:
        A fresh dict (safe to modify).
    """
    data = json.loads((RESPONSES / f"{name}.json").read_text(encoding="utf-8"))
    if name.startswith("mturk/"):
        data = _with_datetimes(data)
    data = copy.deepcopy(data)
    data.update(overrides)
    return data


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy AWS credentials and no user AWS config: nothing can reach a real account."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_MTURK", raising=False)


@pytest.fixture
def mturk_stubber(aws_credentials: None) -> Iterator[tuple[Any, Stubber]]:
    """A real sandbox mturk client wrapped in botocore's Stubber; fails if a queued response is unused."""
    client = mturk_api.make_client(sandbox=True, max_attempts=1)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def fake_mturk_server(aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMTurkServer]:
    """A running fake MTurk; ``AWS_ENDPOINT_URL_MTURK`` points boto3 at it."""
    with FakeMTurkServer() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_MTURK", server.url)
        yield server


@pytest.fixture
def fake_prolific_server() -> Iterator[FakeProlificServer]:
    """A running fake Prolific API (two items per page, to exercise pagination)."""
    with FakeProlificServer() as server:
        yield server


@pytest.fixture
def prolific_client(fake_prolific_server: FakeProlificServer) -> ProlificClient:
    """A ``ProlificClient`` pointed at the fake with its token and short timeouts."""
    return ProlificClient(
        token=fake_prolific_server.token, base_url=fake_prolific_server.api_url, timeout=(2.0, 5.0)
    )
