"""Import in the gunicorn master what every web worker imports on its first requests.

Why: with ``preload_app`` (``gunicorn.conf.py``) the master loads the application once and forks the
workers from it, so the modules it has imported sit in memory pages the workers share (copy-on-write)
instead of each worker importing its own copy on its first requests. Left to the first requests, a worker
imports about 500 more modules (the URLconf's views, every installed app's template tag libraries, which
pull in Django REST framework's optional ``requests``, ``markdown`` and ``pygments``; the Redis client;
Celery's task-sending machinery) and grows from about 70 to 100 MB on its own.

Nothing here opens a connection: the database connection the application may have opened while loading
is closed, so no worker inherits a socket from the master.
"""

from __future__ import annotations

import gc


def warm() -> None:
    """Resolve every view, load the template engines and the broker and cache clients, then freeze the
    objects so far (``gc.freeze``: the workers' garbage collections leave those pages unwritten)."""
    from django.core.cache import caches
    from django.core.files.storage import storages
    from django.db import connections
    from django.template import engines
    from django.urls import URLPattern, get_resolver
    from django.utils.formats import get_format_modules

    def walk(resolver) -> None:  # noqa: ANN001
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLPattern):
                pattern.callback  # noqa: B018 - importing the view is the point
            else:
                walk(pattern)

    walk(get_resolver())
    for engine in engines.all():
        engine.engine.template_loaders  # noqa: B018
        engine.engine.template_context_processors  # noqa: B018
    get_format_modules()
    storages["staticfiles"]
    caches["default"]
    import redis  # noqa: F401 - the cache and the broker's client

    from config.celery import app

    app.loader.import_default_modules()
    app.amqp  # noqa: B018
    app.backend  # noqa: B018
    connections.close_all()
    gc.collect()
    gc.freeze()
