"""Run test code in several threads at once, each with its own database connection.

Django gives every thread its own connection, which the thread must close itself; tests that race
requests (claims, payments, submissions) start their threads here and wait for all of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection


def run_in_threads(target: Callable[..., Any], args: Iterable[tuple[Any, ...]]) -> None:
    """Call ``target(*a)`` for every ``a`` in ``args``, each in its own thread, and wait for them all."""

    def body(*call_args: Any) -> None:
        try:
            target(*call_args)
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=a) for a in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
