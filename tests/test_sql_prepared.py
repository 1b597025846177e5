"""A statement written as SQL is prepared once per PostgreSQL session and run by name
(:mod:`annotation.sql_prepared`); elsewhere it is sent as written."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.sql_prepared import statement

pytestmark = pytest.mark.django_db(transaction=True)


def _prepared_here() -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'crowdqa_%%'")
        return dict(cursor.fetchall())


def _run(sql: str, *params: object) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement(connection, sql), params)
        return cursor.fetchall()


def test_placeholders_and_literal_percent_signs() -> None:
    """``%s`` is a parameter and ``%%`` a percent sign, as the DB-API ``format`` style has them."""
    sql = "SELECT %s || '%%', %s || %s WHERE %s LIKE 'a%%'"
    assert _run(sql, "50", "x", "y", "abc") == [("50%", "xy")]
    assert _run(sql, "7", "", "", "bcd") == []
    assert _run("SELECT 'no parameters, 100%%'") == [("no parameters, 100%",)]


def test_prepared_once_per_session_and_again_in_a_new_one() -> None:
    if connection.vendor != "postgresql":
        assert statement(connection, "SELECT %s") == "SELECT %s"
        pytest.skip("PostgreSQL prepared statements")
    connection.ensure_connection()
    connection.close()
    connection.ensure_connection()
    assert _prepared_here() == {}
    sent = statement(connection, "SELECT %s::int + %s::int")
    assert sent.startswith("EXECUTE crowdqa_") and sent.endswith("(%s, %s)")
    for _ in range(3):
        assert _run("SELECT %s::int + %s::int", 2, 3) == [(5,)]
    ((name, text),) = _prepared_here().items()
    assert sent == f"EXECUTE {name}(%s, %s)" and text.endswith("AS SELECT $1::int + $2::int")
    changed = statement(connection, "SELECT %s::int - %s::int")
    assert changed != sent and len(_prepared_here()) == 2
    connection.close()
    assert _run("SELECT %s::int + %s::int", 1, 1) == [(2,)]  # a new session: prepared again
    assert len(_prepared_here()) == 1
