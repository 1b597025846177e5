"""Readiness probe of a web host: can it reach what every request may need?

``/health/`` (console.views.health) says the process answers; ``/health/ready/`` also asks the shared
services a host depends on (docs/deployment.md): the database, Redis when ``REDIS_URL`` is set (the
broker and the shared cache), and the storage of ``CROWDQA_STORAGE_URL`` (or the local one). A load
balancer takes a host that answers 503 out of rotation until it answers 200 again.

Security behavior: no login and no data: the answer names each service with ``ok`` or ``unavailable``
only (never an error text, an address or a bucket name); the probes are one cheap call each and read or
write nothing of the platform's (S3: the bucket is asked whether it exists; on the disk, a fixed path).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)

PROBE_KEY = "health/ready"


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def _redis() -> None:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()


def _storage() -> None:
    from config.storage import shared_storage

    storage = shared_storage()
    bucket = getattr(storage, "bucket", None)  # S3: a missing bucket or key is an error, not "absent"
    if bucket is not None:
        bucket.meta.client.head_bucket(Bucket=bucket.name)
    else:
        storage.exists(PROBE_KEY)


@never_cache
@require_GET
def ready(request: HttpRequest) -> JsonResponse:
    """200 when every shared service answers, else 503; each service's state (``ok``/``unavailable``)."""
    probes: dict[str, Callable[[], None]] = {"database": _database, "storage": _storage}
    if settings.REDIS_URL:
        probes["redis"] = _redis
    checks: dict[str, str] = {}
    for name, probe in probes.items():
        try:
            probe()
        except Exception:  # any failure means "not ready"; the reason goes to the log only
            logger.warning("readiness: %s unavailable", name, exc_info=True)
            checks[name] = "unavailable"
        else:
            checks[name] = "ok"
    ok = all(state == "ok" for state in checks.values())
    return JsonResponse(
        {"status": "ok" if ok else "unavailable", "checks": checks}, status=200 if ok else 503
    )
