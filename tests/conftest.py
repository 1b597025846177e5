"""Fixtures shared by every test package.

``shared_data(name)`` gives the path of a real dataset under ../shared/data. When the dataset is absent
the test is skipped with a clear message, or fails when ``CROWDQA_REQUIRE_SHARED_DATA=1`` (CI).

The Jinja2 task pages (``worker/task_templates.py``) fill ``response.context`` in the test client as
Django's templates do: Django's test environment instruments its own engine only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from config.shared_data import dataset_dir, require_shared_data, shared_data_dir

# One definition of the distractor fixtures for tests/unit/distractors and the DB tests that need a
# trained ranker: session scope only shares a fixture when it is defined once. The S3 server serves the
# storage tests and the command's publishing tests.
pytest_plugins = [
    "tests.distractor_fixtures",
    "tests.s3_server",
    "tests.webhook_receiver",
    "tests.hub_server",
]


@pytest.fixture(autouse=True, scope="session")
def _jinja2_rendering_signalled() -> Iterator[None]:
    """Send ``template_rendered`` for every Jinja2 render, as ``setup_test_environment`` makes Django's
    engine do, so the test client records the task pages' context."""
    from django.template.backends import jinja2 as backend
    from django.test.signals import template_rendered

    original = backend.Template.render

    def render(self: Any, context: Optional[dict[str, Any]] = None, request: Any = None) -> str:
        template_rendered.send(sender=self, template=self, context=dict(context or {}))
        return original(self, context, request)

    backend.Template.render = render
    yield
    backend.Template.render = original


if not os.environ.get("DJANGO_SECRET_KEY"):
    # pytest run without scripts/test.sh: the test process signs with the development key, so the
    # servers it starts (gunicorn in integration tests) must accept it as the demo does.
    os.environ["CROWDQA_DEMO"] = "1"


def _locate(name: str) -> Path:
    path = dataset_dir(name)
    if path is None:
        message = (
            f"dataset '{name}' not found under {shared_data_dir()} "
            "(set CROWDQA_SHARED_DATA to the folder holding the real datasets)"
        )
        if require_shared_data():
            pytest.fail(message + "; CROWDQA_REQUIRE_SHARED_DATA=1 makes this an error")
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data() -> Callable[[str], Path]:
    """Return a function mapping a dataset name (``syllabusqa``, ``sciq`` ...) to its directory."""
    return _locate


@pytest.fixture
def eager_celery() -> Iterator[None]:
    """Run Celery tasks inline (approving stage-1 work creates the stage-2 HIT through a task)."""
    from config.celery import app

    old = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = old
