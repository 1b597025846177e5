"""The systemd example of docs/deployment.md (deploy/systemd/) runs as written.

Each unit's ``ExecStart`` is started the way systemd would start it: in its ``WorkingDirectory`` with
the variables of its ``EnvironmentFile``, ``%i`` and ``%H`` expanded; only the installation paths
(``/opt/crowdqa`` -> this checkout and its virtualenv, ``/var/lib/crowdqa`` -> a temporary folder), the
web port and the addresses of the shared services (the test database, Redis, moto's S3 server) are
changed. Then the documented health checks answer: ``/health/`` over plain http although the file turns
on the https redirect, ``celery inspect ping`` from both workers, and a gpu job reaches the gpu unit.
"""

from __future__ import annotations

import configparser
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from config.celery import app as celery_app
from tests.integration.conftest import REPO, _free_port, database_url, redis_url  # noqa: F401 (fixture)

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

UNITS = REPO / "deploy" / "systemd"
INSTALL, STATE = "/opt/crowdqa", "/var/lib/crowdqa"
BUCKET = "lab-units"


def read_unit(name: str) -> configparser.ConfigParser:
    """A unit file (INI-like: sections, ``Key=value``, ``#`` comments), keys kept as written."""
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string((UNITS / name).read_text(encoding="utf-8"))
    return parser


def read_env_file() -> dict[str, str]:
    """``KEY=value`` lines of crowdqa.env, as systemd's EnvironmentFile reads them (no quotes used)."""
    values: dict[str, str] = {}
    for line in (UNITS / "crowdqa.env").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def test_units__every_process_of_the_docs_with_the_shared_environment() -> None:
    units = sorted(p.name for p in UNITS.glob("*.service"))
    assert units == ["crowdqa-beat.service", "crowdqa-web.service", "crowdqa-worker@.service"]
    for name in units:
        service = read_unit(name)["Service"]
        assert service["WorkingDirectory"] == INSTALL
        assert service["EnvironmentFile"] == "/etc/crowdqa/crowdqa.env"
        assert shlex.split(service["ExecStart"])[0].startswith(f"{INSTALL}/.venv/bin/")
        assert service["User"] == "crowdqa" and read_unit(name)["Install"]["WantedBy"] == "multi-user.target"
    env = read_env_file()
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CROWDQA_STORAGE_URL"} <= env.keys()
    documented = (REPO / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    assert all(f"`{key}`" in documented for key in env)


def _command(unit: str, instance: str, replacements: dict[str, str]) -> list[str]:
    line = read_unit(unit)["Service"]["ExecStart"]
    words = shlex.split(line.replace("%i", instance).replace("%H", socket.gethostname()))
    tool = words[0].removeprefix(f"{INSTALL}/.venv/bin/")
    assert "/" not in tool, words[0]
    arguments = []
    for word in words[1:]:
        for old, new in replacements.items():
            word = word.replace(old, new)
        arguments.append(word)
    return [sys.executable, "-m", tool, *arguments]  # the virtualenv running the tests


@pytest.fixture
def started(s3_server, redis_url: str, tmp_path: Path) -> Iterator[dict[str, object]]:  # noqa: F811
    """Every unit running: the web unit, the worker unit for default and for gpu, and beat."""
    s3_server.client().create_bucket(Bucket=BUCKET)
    state = tmp_path / "state"
    state.mkdir()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_TASK_ALWAYS_EAGER")}
    env |= read_env_file()
    env |= {
        "DATABASE_URL": database_url(),
        "REDIS_URL": redis_url,
        "CROWDQA_STORAGE_URL": f"s3://{BUCKET}/prod",
        "CROWDQA_VAR_DIR": str(state),
        "DJANGO_SECRET_KEY": os.environ["DJANGO_SECRET_KEY"],
        "ALLOWED_HOSTS": env["ALLOWED_HOSTS"] + ",127.0.0.1",
    }
    replacements = {INSTALL: str(REPO), STATE: str(state), "127.0.0.1:8000": f"127.0.0.1:{port}"}
    cwd = Path(read_unit("crowdqa-web.service")["Service"]["WorkingDirectory"].replace(INSTALL, str(REPO)))
    processes: list[subprocess.Popen] = []
    for unit, instance in (
        ("crowdqa-web.service", ""),
        ("crowdqa-worker@.service", "default"),
        ("crowdqa-worker@.service", "gpu"),
        ("crowdqa-beat.service", ""),
    ):
        log = (tmp_path / f"{unit.split('.')[0]}{instance}.log").open("w")
        processes.append(
            subprocess.Popen(
                _command(unit, instance, replacements),
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    try:
        yield {"url": f"http://127.0.0.1:{port}", "env": env, "state": state, "logs": tmp_path}
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


def _logs(path: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in path.glob("*.log"))


def test_units__started_as_written_answer_their_health_checks(started: dict[str, object]) -> None:
    url, env, logs = str(started["url"]), started["env"], Path(str(started["logs"]))
    health = None
    for _ in range(240):
        try:
            health = requests.get(f"{url}/health/", timeout=5, allow_redirects=False)
            break
        except requests.RequestException:
            time.sleep(0.5)
    assert health is not None and health.status_code == 200, _logs(logs)
    assert health.json() == {"status": "ok"}
    ready = requests.get(f"{url}/health/ready/", timeout=30)
    assert ready.status_code == 200, ready.text + _logs(logs)
    assert ready.json()["checks"] == {"database": "ok", "storage": "ok", "redis": "ok"}
    # The file turns on the https redirect: every page but the health checks goes to https.
    assert requests.get(f"{url}/accounts/login/", timeout=10, allow_redirects=False).status_code == 301

    host = socket.gethostname()
    ping = [sys.executable, "-m", "celery", "-A", "config", "inspect", "ping", "--timeout", "5"]
    ping += ["-d", f"default@{host},gpu@{host}"]
    for _ in range(20):
        answer = subprocess.run(ping, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        if answer.stdout.count("pong") == 2:
            break
        time.sleep(2)
    assert answer.stdout.count("pong") == 2, answer.stdout + answer.stderr + _logs(logs)

    from evaluation.tasks import gpu_environment

    with celery_app.connection_for_write(str(env["REDIS_URL"])) as connection:  # type: ignore[index]
        result = gpu_environment.apply_async(connection=connection)
    assert result.get(timeout=120)["worker"] == f"gpu@{host}"
    # Beat is up and keeps its schedule under the state folder, as its unit says.
    assert (Path(str(started["state"])) / "celerybeat-schedule").exists() or list(
        Path(str(started["state"])).glob("celerybeat-schedule*")
    ), _logs(logs)
