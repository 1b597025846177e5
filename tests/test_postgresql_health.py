"""The PostgreSQL backend's health check (:mod:`config.postgresql.base`): no round trip on a connection in
use, Django's ``SELECT 1`` otherwise, and a connection the server ended is never reused.

What the server saw is read from ``pg_stat_activity`` (each session's last statement) through a second
connection, so "no round trip" is the server's word, not the backend's.
"""

from __future__ import annotations

import select
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import close_old_connections, connection, connections

from config.postgresql import base
from tests.factories import make_researcher

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the backend is PostgreSQL's: run with DATABASE_URL"
    ),
]


@pytest.fixture
def opened() -> Iterator[Any]:
    """A connection of its own to the test database, opened, and closed after the test."""
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def _last_statement(pid: int) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0]


def _wait_readable(wrapper: Any) -> None:
    poller = select.poll()
    poller.register(wrapper.connection.pgconn.socket, select.POLLIN)
    assert poller.poll(5000), "the server's close never reached the socket"


def test_backend_is_the_projects() -> None:
    assert isinstance(connections["default"], base.DatabaseWrapper)


def _run(wrapper: Any, sql: str) -> int:
    """Run ``sql`` on ``wrapper``; the server process's id."""
    with wrapper.cursor() as cursor:
        cursor.execute(sql)
    return wrapper.connection.info.backend_pid


def test_in_use__usable_without_a_statement(opened: Any) -> None:
    pid = _run(opened, "SELECT 42")
    assert opened.is_usable()
    assert _last_statement(pid) == "SELECT 42"


def test_quiet_too_long__asks_the_server(opened: Any) -> None:
    pid = _run(opened, "SELECT 42")
    opened.usable_at = time.monotonic() - base.QUIET_SECONDS - 1
    assert opened.is_usable()
    assert _last_statement(pid) == "SELECT 1"
    # Found usable just now: the next check needs no statement.
    _run(opened, "SELECT 43")
    assert opened.is_usable()
    assert _last_statement(pid) == "SELECT 43"


def test_in_a_transaction__asks_the_server(opened: Any) -> None:
    opened.set_autocommit(False)
    pid = _run(opened, "SELECT 42")
    assert opened.is_usable()
    assert _last_statement(pid) == "SELECT 1"
    opened.rollback()
    opened.set_autocommit(True)


def test_ended_by_the_server__not_usable(opened: Any) -> None:
    pid = opened.connection.info.backend_pid
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    _wait_readable(opened)
    assert not opened.is_usable()
    assert opened.usable_at is None


def test_a_request_after_the_server_ended_the_connection__served(client: Any, monkeypatch: Any) -> None:
    """Django's own path: the request's first query finds the ended connection replaced, not a 500; a
    connection in use is then reused without Django's ``SELECT 1``."""
    asked = []
    djangos = base.base.DatabaseWrapper.is_usable

    def counted(wrapper: Any) -> bool:
        asked.append(wrapper.connection.info.backend_pid)
        return djangos(wrapper)

    monkeypatch.setattr(base.base.DatabaseWrapper, "is_usable", counted)

    def get() -> int:
        # A server sends ``request_started``, whose handler starts each request's health check; Django's
        # test client leaves that handler out.
        close_old_connections()
        return client.get("/").status_code

    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = 600  # kept between requests, as deployed
    try:
        client.force_login(make_researcher("health"))
        assert get() == 200
        pid = connection.connection.info.backend_pid
        observer = connections.create_connection("default")
        with observer.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        observer.close()
        _wait_readable(connection)
        asked.clear()
        assert get() == 200
        assert asked == [pid] and connection.connection.info.backend_pid != pid
        asked.clear()
        assert get() == 200
        assert get() == 200
        assert asked == []
    finally:
        connection.settings_dict["CONN_MAX_AGE"] = 0
        connection.close()
