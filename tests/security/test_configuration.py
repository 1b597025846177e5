"""Configuration fails closed: no secret, short salts, framing, HTTPS settings, access logs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client

from annotation.checks import startup_errors
from annotation.services.batches import BatchSpec, create_batch
from config.access_log import RedactingLogger, redact_target
from tests.factories import make_textbook

REPO = Path(__file__).resolve().parents[2]
DEV_KEY = "crowdqa-insecure-development-key-change-me"


def _ids(messages: list[Any]) -> set[str]:
    return {m.id for m in messages}


def test_checks__development_key_refused_outside_the_demo(settings: Any) -> None:
    settings.SECRET_KEY = DEV_KEY
    settings.CROWDQA_PSEUDONYM_SALT = DEV_KEY
    settings.DEBUG = False
    settings.CROWDQA_DEMO = False
    assert {"crowdqa.E001", "crowdqa.E003"} <= _ids(startup_errors())
    settings.CROWDQA_DEMO = True
    assert not startup_errors()
    settings.CROWDQA_DEMO = False
    settings.SECRET_KEY = "a-real-secret-" + "x" * 40
    settings.CROWDQA_PSEUDONYM_SALT = "a-real-salt-" + "y" * 20
    assert not startup_errors()


def test_checks__debug_does_not_open_the_development_key(settings: Any) -> None:
    """DJANGO_DEBUG=true once disabled the refusal; only CROWDQA_DEMO may run on the published key."""
    settings.SECRET_KEY = DEV_KEY
    settings.CROWDQA_PSEUDONYM_SALT = DEV_KEY
    settings.DEBUG = True
    settings.CROWDQA_DEMO = False
    errors = startup_errors()
    assert {"crowdqa.E001", "crowdqa.E003"} <= _ids(errors)
    for error in errors:
        assert "DEBUG" not in f"{error.msg} {error.hint}", error


def test_checks__short_pseudonym_salt_is_an_error_even_in_debug(settings: Any) -> None:
    settings.DEBUG = True
    settings.CROWDQA_PSEUDONYM_SALT = "short"
    assert "crowdqa.E002" in _ids(startup_errors())


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DJANGO_SECRET_KEY", "CROWDQA_DEMO", "DJANGO_DEBUG", "CROWDQA_PSEUDONYM_SALT")
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_wsgi__refuses_to_start_without_a_secret_and_starts_with_one() -> None:
    refused = _python("import config.wsgi")
    assert refused.returncode != 0 and "crowdqa.E001" in refused.stderr
    assert "DJANGO_SECRET_KEY" in refused.stderr
    started = _python("import config.wsgi", DJANGO_SECRET_KEY="s" * 50)
    assert started.returncode == 0, started.stderr[-2000:]
    debug = _python("import config.wsgi", DJANGO_DEBUG="true")
    assert debug.returncode != 0 and "crowdqa.E001" in debug.stderr
    assert "DEBUG" not in debug.stderr.split("crowdqa refuses to start")[-1]
    demo = _python("import config.wsgi", CROWDQA_DEMO="1")
    assert demo.returncode == 0, demo.stderr[-2000:]


def test_settings__https_options_come_from_the_environment() -> None:
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
        "s.DATA_UPLOAD_MAX_MEMORY_SIZE > 0)"
    )
    on = _python(
        code,
        DJANGO_SECRET_KEY="s" * 50,
        CROWDQA_SECURE_COOKIES="1",
        CROWDQA_SSL_REDIRECT="1",
        CROWDQA_HSTS_SECONDS="31536000",
    )
    assert on.stdout.split() == ["True", "True", "True", "31536000", "True"], on.stderr[-2000:]
    checked = _python(
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('check', '--deploy', '--fail-level', 'WARNING')",
        DJANGO_SECRET_KEY="s" * 60 + "xyz",
        CROWDQA_SECURE_COOKIES="1",
        CROWDQA_SSL_REDIRECT="1",
        CROWDQA_HSTS_SECONDS="31536000",
        PUBLIC_BASE_URL="https://crowdqa.example.org",
        ALLOWED_HOSTS="crowdqa.example.org",
    )
    for warning in ("W004", "W008", "W012", "W016", "crowdqa."):
        assert warning not in checked.stderr, checked.stderr[-3000:]


def test_settings__web_workers_keep_their_postgresql_connection() -> None:
    code = (
        "from config import settings as s; d = s.DATABASES['default']; "
        "print(d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS'])"
    )
    postgres = "postgres://postgres@127.0.0.1:5440/crowdqa_unused"
    assert _python(code, DATABASE_URL=postgres).stdout.split() == ["600", "True"]
    assert _python(code, DATABASE_URL=postgres, DATABASE_CONN_MAX_AGE="0").stdout.split() == ["0", "True"]
    assert _python(code, DATABASE_URL="sqlite:////tmp/crowdqa-unused.sqlite3").stdout.split()[0] == "0"


@pytest.mark.django_db
def test_framing__hit_pages_only_by_mturk_everything_else_deny(client: Client) -> None:
    make_textbook("tb", [f"Mitochondria release energy from glucose in cells ({n})." for n in range(3)])
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="mturk"))
    batch.publish()
    hit = batch.hits.get()
    hit.platform_ref = "H1"
    hit.save()
    preview = client.get(f"/hit/{batch.pk}/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H1"})
    assert preview.status_code == 200
    assert "X-Frame-Options" not in preview
    policy = preview["Content-Security-Policy"]
    assert policy.startswith("frame-ancestors 'self' https://worker.mturk.com https://www.mturk.com")
    assert "*" not in policy
    for path in ("/", "/work/login/", "/health/"):
        response = client.get(path)
        assert response["X-Frame-Options"] == "DENY", path


def test_access_log__no_worker_ids_or_signed_links() -> None:
    target = "/hit/3/?assignmentId=3XYZ&workerId=A1WORKER&turkSubmitTo=https%3A%2F%2Fwww.mturk.com"
    assert redact_target(target) == "/hit/3/?assignmentId=-&workerId=-&turkSubmitTo=-"
    assert redact_target("/a/17:Zm9vYmFy/draft/") == "/a/<token>/draft/"
    assert redact_target("/work/invite/SECRET/") == "/work/invite/<token>/"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": "/hit/1/?PROLIFIC_PID=pid123&SESSION_ID=s1",
        "PATH_INFO": "/hit/1/",
        "QUERY_STRING": "PROLIFIC_PID=pid123&SESSION_ID=s1",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_REFERER": "https://h/a/1:tok/",
    }
    logger = RedactingLogger.__new__(RedactingLogger)
    logger.cfg = SimpleNamespace(env={})  # type: ignore[attr-defined]
    response = SimpleNamespace(status="200 OK", sent=10, headers=[])
    request_time = SimpleNamespace(seconds=0, microseconds=5)
    atoms = logger.atoms(response, SimpleNamespace(headers=[]), environ, request_time)
    line = " ".join(str(v) for v in atoms.values())
    assert "pid123" not in line and "1:tok" not in line and "s1&" not in line
