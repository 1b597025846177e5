"""Import in the gunicorn master what every web worker imports on its first requests.

Why: with ``preload_app`` (``gunicorn.conf.py``) the master loads the application once and forks the
workers from it, so the modules it has imported sit in memory pages the workers share (copy-on-write)
instead of each worker importing its own copy on its first requests. Left to the first requests, a worker
imports some hundreds more modules (the URLconf's views, every installed app's template tag libraries
and, where a submit publishes its follow-up, Celery's task-sending machinery and the broker's client).
Only those: what a HIT page never uses (every app's task modules, the REST API, and with Redis the
broker's client, since a submit then publishes nothing) stays out of the master too, since a forked
worker's resident memory counts every page the master holds (tests/unit/test_web_warmup.py).

Nothing here opens a connection: the database connection the application may have opened while loading
is closed, so no worker inherits a socket from the master.
"""

from __future__ import annotations

import contextlib
import gc


def warm() -> None:
    """Resolve every view and build the URL reverse tables, load the template engines (the task pages
    compiled), the broker and cache clients, then freeze the objects so far (``gc.freeze``: the
    workers' garbage collections leave those pages unwritten)."""
    from django.conf import settings
    from django.core.cache import caches
    from django.core.files.storage import storages
    from django.db import connections
    from django.template import engines
    from django.template.backends.jinja2 import Jinja2
    from django.urls import NoReverseMatch, URLPattern, get_resolver, reverse
    from django.utils.formats import get_format_modules
    from django.utils.module_loading import import_string

    def tables(namespace: str) -> None:
        # A first reverse in a process builds the reverse tables of the URLconf and of the route's
        # namespace (about 70 ms and 0.6 MB for the links of a HIT page): built here, the workers share
        # them. A name that matches nothing builds them all the same.
        with contextlib.suppress(NoReverseMatch):
            reverse(f"{namespace}crowdqa-warm-up")

    def walk(resolver, namespace: str = "") -> None:  # noqa: ANN001
        for pattern in resolver.url_patterns:
            if isinstance(pattern, URLPattern):
                pattern.callback  # noqa: B018 - importing the view is the point
            else:
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                if inner != namespace:
                    tables(inner)
                walk(pattern, inner)

    tables("")
    walk(get_resolver())
    for engine in engines.all():
        if isinstance(engine, Jinja2):  # the task pages, compiled once here and shared by the workers
            for name in engine.env.list_templates():
                engine.env.get_template(name)
            continue
        engine.engine.template_loaders  # noqa: B018
        engine.engine.template_context_processors  # noqa: B018
    get_format_modules()
    connections["default"].ops.compiler("SQLCompiler")  # the backend's SQL compilers (no connection)
    storages["staticfiles"]
    caches["default"]
    if not settings.CROWDQA_FOLLOWUP_BATCHING:
        # What a submit loads to publish its follow-up (crowd.services.followups, whose two small modules
        # the first submit imports itself: this layer imports no app): Celery's sending machinery, the
        # broker's client and transport class (building a connection object connects nothing). With
        # batching a submit publishes nothing (looks that beat sends follow them up), so neither is loaded:
        # a worker that publishes a job (a researcher's action, a model-loop check) loads them then.
        # Not ``app.loader.import_default_modules()``: that imports every app's task modules (the
        # webhook sender's HTTP client, the filters, the distractor models' store), which a web worker
        # never runs.
        from config.celery import app

        app.amqp  # noqa: B018
        app.backend  # noqa: B018
        app.Task  # noqa: B018
        app.connection_for_write().transport  # noqa: B018
        app.events.Dispatcher  # noqa: B018 - the task-sent event machinery a publish loads
    # The session and message storage the middleware loads on a request's first use.
    import_string(settings.SESSION_SERIALIZER)
    import_string(settings.MESSAGE_STORAGE)
    connections.close_all()
    gc.collect()
    gc.freeze()
