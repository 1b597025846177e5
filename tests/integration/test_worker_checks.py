"""Celery workers and beat run the crowdqa system checks at start and refuse to start on an error, as the
web server does (config/wsgi.py): a malformed ``CROWDQA_STORAGE_URL`` stops ``celery worker`` and
``celery beat`` with the check's message (crowdqa.E030) instead of a worker that fails every job later.

Workers started with a valid configuration are shown serving jobs by the other integration tests
(test_hosts.py, test_systemd_units.py, test_celery_queues.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "-Q", "default", "--pool", "solo", "-n", "refused@%h", "--without-mingle"],
        ["beat", "--schedule", "{var}/beat-schedule"],
    ],
    ids=["worker", "beat"],
)
def test_malformed_storage_url__celery_refuses_to_start_naming_the_check(
    command: list[str], tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER")}
    env |= {"CROWDQA_VAR_DIR": str(tmp_path), "CROWDQA_STORAGE_URL": "ftp://lab/crowdqa"}
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config"] + [a.format(var=tmp_path) for a in command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    assert (
        "crowdqa refuses to start:" in output and "crowdqa.E030: CROWDQA_STORAGE_URL is malformed" in output
    )
    assert "'ftp://lab/crowdqa' is not an s3:// URL" in output
    assert " ready." not in output  # the worker never consumed from its queue
