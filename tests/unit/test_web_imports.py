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
# requests is not on the list: Django REST framework (the API's views) imports it, when installed, in
# rest_framework.compat for its test client; it is small beside the packages above.

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
):
    importlib.import_module(module)
heavy = json.loads(sys.argv[1])
print(json.dumps({"views": views, "loaded": sorted(m for m in heavy if m in sys.modules)}))
"""


def test_web_worker_imports_no_ml_stack_or_platform_sdk() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(HEAVY)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"probe failed:\n{result.stderr[-3000:]}")
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["views"] > 50, report
    assert report["loaded"] == [], f"web process imported {report['loaded']}"
