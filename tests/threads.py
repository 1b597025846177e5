"""Run test code in several threads at once, each with its own database connection.

Django gives every thread its own connection, which the thread must close itself; tests that race
requests (claims, payments, submissions) start their threads here and wait for all of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest
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


def skip_unless_threads_share_the_database() -> None:
    """Skip the calling test on an in-memory SQLite database, where another thread sees no tables.

    The test settings use a file database, so this skips only when someone points them at ``:memory:``.
    """
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("threads need a file database: another thread sees no tables in an in-memory one")
