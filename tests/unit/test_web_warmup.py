"""The gunicorn master's warm-up (``config/warmup.py``, run by ``gunicorn.conf.py`` with ``preload_app``).

What the master imports is shared by every worker it forks, so it must be what a worker imports on its
first HIT page and submit anyway (the template tag libraries, the template loaders, and Celery's
sending machinery where a submit publishes its follow-up), never the ML stack, the platform SDKs or
the libraries only other paths use (``NOT_ON_HIT_PATH``: the task modules' HTTP client, pydantic...),
and it must leave no database connection open for the workers to inherit. Neither the job result store
nor (with Redis) Celery is loaded at all (``RESULT_STORE``, ``CELERY``). Runs in a fresh interpreter with
the environment gunicorn's configuration gives its master.
"""

from __future__ import annotations

import json
import os
import runpy
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.unit.test_web_imports import HEAVY, NOT_ON_HIT_PATH, run_probe

ROOT = Path(__file__).resolve().parents[2]

#: Imported by a worker's first HIT page and submit (measured with a sys.modules diff).
FIRST_REQUESTS = (
    "django.template.loaders.cached",
    "django.template.context_processors",
    "django.db.models.sql.compiler",
    "django.contrib.messages.storage.fallback",
    "whitenoise.storage",
)
#: What a submit loads to publish its follow-up: on the embedded broker (no Redis), where each submit
#: queues its own job; with Redis looks that beat sends follow them up and a submit loads none of it
#: (crowd.services.followups).
PUBLISHING = {
    "embedded": ("celery.app.amqp", "celery.events.dispatcher", "kombu.transport.filesystem"),
    "redis": ("celery.app.amqp", "celery.events.dispatcher", "kombu.transport.redis", "redis.client"),
}
#: Celery itself, which the web server loads only to publish (config/jobs.py): at start-up where a
#: submit publishes, never with Redis. The job result store it never loads (config/settings.py).
CELERY = ("celery", "celery.result", "kombu")
RESULT_STORE = ("django_celery_results.models",)

PROBE = """
import gc, json, sys
import config.wsgi
from django.db import connection
connection.ensure_connection()  # as if loading the application had queried the database
from config.warmup import warm
before = sorted(m for m in json.loads(sys.argv[1]) if m in sys.modules)
warm()
from django.urls import reverse
from django.urls.resolvers import URLResolver
built = []
populate = URLResolver._populate
URLResolver._populate = lambda self: (built.append(self), populate(self))[1]
reverse("hits:draft", kwargs={"token": "t"}), reverse("worker:home")
names = json.loads(sys.argv[1]) + json.loads(sys.argv[2]) + json.loads(sys.argv[3]) + json.loads(sys.argv[4])
print(json.dumps({
    "before": before,
    "loaded": sorted(m for m in names if m in sys.modules),
    "connected": connection.connection is not None,
    "frozen": gc.get_freeze_count(),
    "reverse_tables_built_after": len(built),
}))
"""


@pytest.mark.parametrize("broker", ["embedded", "redis"])
def test_warm_imports_what_first_requests_import_and_closes_the_database(tmp_path: Path, broker: str) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'warm.sqlite3'}",
        "CROWDQA_VAR_DIR": str(tmp_path / "var"),
    }
    env.pop("REDIS_URL", None)
    env.pop("CROWDQA_FOLLOWUP_BATCHING", None)
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    # What the master's environment holds when gunicorn loads the application (its ``raw_env``).
    env.update(line.split("=", 1) for line in runpy.run_path(str(ROOT / "gunicorn.conf.py"))["raw_env"])
    if broker == "redis":
        env["REDIS_URL"] = "redis://127.0.0.1:1/0"  # the Redis cache and broker, never connected to
    expected = FIRST_REQUESTS + (PUBLISHING["embedded"] + CELERY if broker == "embedded" else ())
    env.setdefault("DJANGO_SECRET_KEY", "warm-up-test-secret-key-0123456789abcdefghijklmnopqrstuv")
    env.setdefault("CROWDQA_PSEUDONYM_SALT", "warm-up-test-salt-0123456789abcdefghijklmnopqrstuvwxyz")
    report = run_probe(
        PROBE,
        json.dumps(sorted({*FIRST_REQUESTS, *PUBLISHING["embedded"], *PUBLISHING["redis"]})),
        json.dumps(HEAVY),
        json.dumps(NOT_ON_HIT_PATH),
        json.dumps(CELERY + RESULT_STORE),
        env=env,
        timeout=180,
    )
    assert report["before"] != sorted(expected), "the probe would pass without the warm-up"
    assert report["loaded"] == sorted(expected), report
    assert report["connected"] is False
    assert report["frozen"] > 10_000
    # A HIT page's links and the message page's reverse nothing the master has not built.
    assert report["reverse_tables_built_after"] == 0


@pytest.mark.parametrize("preload", [True, False])
def test_when_ready_warms_only_a_preloading_master(monkeypatch: pytest.MonkeyPatch, preload: bool) -> None:
    calls: list[str] = []
    monkeypatch.setattr("config.warmup.warm", lambda: calls.append("warm"))
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    conf["when_ready"](SimpleNamespace(cfg=SimpleNamespace(preload_app=preload)))
    assert calls == (["warm"] if preload else [])


def test_preload_is_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GUNICORN_PRELOAD", raising=False)
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["preload_app"] is True
    monkeypatch.setenv("GUNICORN_PRELOAD", "0")
    assert runpy.run_path(str(ROOT / "gunicorn.conf.py"))["preload_app"] is False


SETTINGS_PROBE = """
import json
from django.conf import settings
print(json.dumps({
    "installed": "django_celery_results" in settings.INSTALLED_APPS,
    "backend": settings.CELERY_RESULT_BACKEND,
}))
"""


@pytest.mark.parametrize(
    ("environment", "stores_results"),
    [
        ({}, True),  # a worker, beat, manage.py
        ({"CROWDQA_WEB_SERVER": "1"}, False),  # gunicorn's processes (its raw_env)
        ({"CROWDQA_WEB_SERVER": "1", "CELERY_TASK_ALWAYS_EAGER": "1"}, True),  # jobs run in the web process
    ],
)
def test_result_store__installed_wherever_jobs_run(environment: dict[str, str], stores_results: bool) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    for name in ("CROWDQA_WEB_SERVER", "CELERY_TASK_ALWAYS_EAGER"):
        env.pop(name, None)
    report = run_probe(SETTINGS_PROBE, env={**env, **environment})
    assert report == {"installed": stores_results, "backend": "django-db" if stores_results else None}
