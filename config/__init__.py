"""crowdqa project configuration.

The Celery app (:mod:`config.celery`) is not loaded here, so a process that runs no job does not load
Celery: ``celery -A config`` finds it as ``config.celery``, and the apps' task modules load it through
:mod:`config.jobs`.
"""
