"""``shared_task`` for the apps' task modules, bound to crowdqa's Celery app in every process.

Celery's ``shared_task`` makes a task of whichever app is current when the task is used, and a process
that has created no app gets Celery's fallback app (its default broker, no queues, no result store). A
worker creates crowdqa's app first (``celery -A config`` loads :mod:`config.celery`); the web server does
not load Celery at start-up (``CROWDQA_WEB_SERVER``: about 8 MB of each web worker's memory, for jobs
most web workers never publish) and imports a task module only where it publishes that module's job.
The task modules import ``shared_task`` from here, so importing one creates crowdqa's app first, in
whatever process and thread publishes.
"""

from __future__ import annotations

from celery import shared_task

import config.celery  # noqa: F401 - creates crowdqa's app, which makes itself Celery's default app

__all__ = ("shared_task",)
