"""The crowdqa Celery application: two queues, ``default`` and ``gpu``, each with an explicit routing key.

A gpu worker is ``celery -A config worker -Q gpu`` on a machine with a GPU; the same task code runs on
CPU. Tasks are routed by name prefix (see ``TASK_ROUTES``) so callers never name a queue themselves.
"""

from __future__ import annotations

import os

from celery import Celery, signals
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("crowdqa")
app.config_from_object("django.conf:settings", namespace="CELERY")
#: Celery's Django fixup closes every database connection before and after each task unless this is
#: set, so each job opened a new PostgreSQL connection (a backend started per job, about as much server
#: CPU as the job's statements). Django's own rule decides instead, as for a request (below).
app.conf.CELERY_DB_REUSE_MAX = 1_000_000_000


@signals.task_prerun.connect
@signals.task_postrun.connect
def _recycle_database_connections(task: object = None, **kwargs: object) -> None:
    """Close a connection that is broken or older than ``CONN_MAX_AGE``, as Django does per request.

    A task run eagerly (inline, in the caller's process: ``task_always_eager`` or ``apply()``) shares
    the caller's connection, perhaps inside its transaction; that one is the caller's to manage.
    """
    request = getattr(task, "request", None)
    if getattr(request, "is_eager", False):
        return
    from django.db import close_old_connections

    close_old_connections()


@signals.worker_init.connect
@signals.beat_init.connect
def _refuse_to_start_on_check_errors(sender: object = None, **kwargs: object) -> None:
    """A worker or beat refuses to start on a crowdqa system check error, as the web server does.

    The checks are ``config/wsgi.py``'s (a malformed ``CROWDQA_STORAGE_URL``, no ``DJANGO_SECRET_KEY``
    outside the demo...): a worker that started anyway would fail every job that writes a file, or sign
    links nobody can check. Celery logs and ignores an ``Exception`` raised by a signal receiver, so the
    refusal is a ``SystemExit``: the process ends with status 1 and the checks' messages on stderr.
    """
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()
    from annotation.checks import startup_errors

    errors = startup_errors()
    if errors:
        raise SystemExit(
            "crowdqa refuses to start:\n" + "\n".join(f"{e.id}: {e.msg} ({e.hint})" for e in errors)
        )


DEFAULT_EXCHANGE = Exchange("default", type="direct")
GPU_EXCHANGE = Exchange("gpu", type="direct")
app.conf.task_queues = (
    Queue("default", DEFAULT_EXCHANGE, routing_key="default"),
    Queue("gpu", GPU_EXCHANGE, routing_key="gpu"),
)
#: Tasks whose names are listed here (or match a glob) run on the gpu queue; everything else on default.
TASK_ROUTES = {
    "evaluation.tasks.gpu_*": {"queue": "gpu", "routing_key": "gpu"},
    "annotation.tasks.gpu_*": {"queue": "gpu", "routing_key": "gpu"},
    "evaluation.loop_tasks.gpu_*": {"queue": "gpu", "routing_key": "gpu"},
    "*": {"queue": "default", "routing_key": "default"},
}
app.conf.task_routes = TASK_ROUTES
app.autodiscover_tasks()
#: a submission's follow-up jobs (crowd/followup_tasks.py) sit beside crowd's own tasks module.
app.autodiscover_tasks(related_name="followup_tasks")
app.autodiscover_tasks(related_name="loop_tasks")
