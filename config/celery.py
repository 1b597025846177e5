"""The crowdqa Celery application: two queues, ``default`` and ``gpu``, each with an explicit routing key.

A gpu worker is ``celery -A config worker -Q gpu`` on a machine with a GPU; the same task code runs on
CPU. Tasks are routed by name prefix (see ``TASK_ROUTES``) so callers never name a queue themselves.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu import Exchange, Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("crowdqa")
app.config_from_object("django.conf:settings", namespace="CELERY")

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
    "*": {"queue": "default", "routing_key": "default"},
}
app.conf.task_routes = TASK_ROUTES
app.autodiscover_tasks()
#: a submission's follow-up jobs (crowd/followup_tasks.py) sit beside crowd's own tasks module.
app.autodiscover_tasks(related_name="followup_tasks")
