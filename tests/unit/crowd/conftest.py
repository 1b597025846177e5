"""Fixtures for the crowd tests: every test runs with dummy AWS credentials (psiTurk's pattern)."""

from __future__ import annotations

import pytest

from tests.fakes import fixtures as _fakes

aws_credentials = _fakes.aws_credentials
mturk_stubber = _fakes.mturk_stubber
fake_mturk_server = _fakes.fake_mturk_server
fake_prolific_server = _fakes.fake_prolific_server
prolific_client = _fakes.prolific_client


@pytest.fixture(autouse=True)
def _no_real_aws(request: pytest.FixtureRequest) -> None:
    """Apply the dummy credentials to every test in this package, so none can reach AWS."""
    request.getfixturevalue("aws_credentials")
