"""Web processes start without the ML stack and the platform SDKs.

A gunicorn worker runs ``django.setup()`` and, on its first request, imports the URLconf and with it every
view module; a HIT page or submit then imports its handler and the submit's task module. None of that
may pull in torch, transformers, spaCy, gensim, scikit-learn, pyarrow, numpy, matplotlib or boto3:
they cost hundreds of MB and seconds per worker and belong to the Celery workers (or the
command) that use them. Runs in a fresh interpreter because this test process has imported them all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    "torch",
    "transformers",
    "spacy",
    "gensim",
    "sklearn",
    "profanity_check",
    "pyarrow",
    "numpy",
    "pandas",
    "matplotlib",
    "boto3",
    "botocore",
)
#: Libraries a web worker serving HIT pages never calls, each a few MB a worker (benchmarks/RESULTS.md,
#: "Web worker memory"): the webhook sender's HTTP client, the ``Batch.options`` schema, span repair and
#: duplicate detection, and what DRF's template tags would pull in if DRF were an installed app.
NOT_ON_HIT_PATH = (
    "requests",
    "urllib3",
    "charset_normalizer",
    "pydantic",
    "rapidfuzz",
    "markdown",
    "pygments",
    "uritemplate",
    "rest_framework.compat",
    "rest_framework.templatetags.rest_framework",
    "webhooks.sending",
    "filters.services",
)
#: What the REST API brings (config/api_urls.py): loaded by the first request under /api/, not before.
API_ONLY = ("rest_framework.serializers", "drf_spectacular.views", "requests", "django.test", "markdown_it")

PROBE = """
import importlib, json, sys
import django
django.setup()
from django.urls import get_resolver, URLPattern

def callbacks(resolver):
    for pattern in resolver.url_patterns:
        if isinstance(pattern, URLPattern):
            yield pattern.callback
        else:
            yield from callbacks(pattern)

views = sum(1 for _ in callbacks(get_resolver()))
from annotation.hits import handler_for  # noqa: F401
for module in (
    "annotation.hits.sciq_question",
    "annotation.hits.sciq_distractor",
    "annotation.hits.syllabus_qa",
    "annotation.hits.expert_answer",
    "annotation.tasks",
    "crowd.followup_tasks",
    "evaluation.loop_tasks",
    "crowd.providers.local.provider",
    "crowd.services.followups",
):
    importlib.import_module(module)
from django.template import engines
for engine in engines.all():  # every installed app's template tag libraries; the task pages' Jinja2
    if hasattr(engine, "env"):
        engine.env.list_templates()
    else:
        engine.engine.template_libraries
heavy = json.loads(sys.argv[1])
print(json.dumps({"views": views, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_web_worker_imports_no_ml_stack_or_platform_sdk() -> None:
    report = run_probe(PROBE, json.dumps(HEAVY))
    assert report["views"] > 50, report
    assert report["loaded"] == [], f"web process imported {report['loaded']}"


def test_web_worker_imports_only_what_hit_pages_use() -> None:
    """Setting up Django, every view, every template tag library and the submit's modules import none of
    the libraries only other paths use: one imported at a module's top again fails here."""
    assert _probe(PROBE, NOT_ON_HIT_PATH) == []
    direct = PROBE.replace(
        "heavy = json.loads", "import annotation.batch_schema, annotation.qc.syllabusqa\nheavy = json.loads"
    )
    assert _probe(direct, ("pydantic",)) == ["pydantic"]  # the probe can fail


def run_probe(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """Run ``code`` in a fresh interpreter (the settings of a web worker unless ``env`` is given) and
    return the JSON report it prints last: imports can only be observed in a process of their own."""
    if env is None:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"probe failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _probe(code: str, names: tuple[str, ...]) -> list[str]:
    return run_probe(code, json.dumps(names))["loaded"]


def test_web_worker_loads_the_api_only_for_an_api_request() -> None:
    code = PROBE.replace(
        "heavy = json.loads(sys.argv[1])",
        "from django.urls import reverse\nreverse('worker:home')\n"
        "import config.wsgi\n"  # the middleware and the start-up checks, as gunicorn loads them
        "heavy = json.loads(sys.argv[1])",
    )
    assert _probe(code, API_ONLY) == []
    after_api = PROBE.replace(
        "heavy = json.loads(sys.argv[1])",
        "from django.test import Client\n"
        "assert Client().get('/api/v1/', HTTP_HOST='localhost', secure=True).status_code < 500\n"
        "heavy = json.loads(sys.argv[1])",
    )
    assert "drf_spectacular.views" in _probe(after_api, API_ONLY)  # the probe can fail


CELERY_PROBE = """
import json, sys
import django
django.setup()
from config.celery import app
app.loader.import_default_modules()
import crowd.services.after_submission, filters.services, annotation.hits.syllabus_qa  # QC's own
heavy = json.loads(sys.argv[1])
print(json.dumps({"loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_default_queue_worker_imports_no_ml_stack_at_start() -> None:
    """A Celery worker imports every task module at start; training, benchmarks and the sentence
    filter import their libraries in the task that uses them (hundreds of MB per pool process)."""
    assert _probe(CELERY_PROBE, HEAVY) == []
