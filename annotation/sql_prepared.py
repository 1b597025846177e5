"""PostgreSQL prepared statements for the hot reads and writes: planned once per database session.

PostgreSQL parses and plans every statement it receives. For the short statements of the worker's hot
path (a join read by key, a conditional UPDATE, a one-row INSERT) that costs as much as running them or
more: 0.7 ms of planning against 0.1 ms of running for the signed link's read. ``PREPARE`` parses and
plans a statement once per session (it outlives the rollback of its transaction) and ``EXECUTE`` runs it
by name. :func:`statement` prepares a statement on first use in a session and returns its ``EXECUTE``
(on SQLite, which plans a statement it has seen from its own cache, the statement itself).

Why by hand: psycopg prepares statements itself (``prepare_threshold``) only on cursors that bind the
parameters on the server, and Django turns those on for every query of a connection at once
(``OPTIONS["server_side_binding"]``), which changes how the parameters of every ORM query are typed and
works for plain SELECT and DML only (psycopg's documentation, "Server-side binding"). These statements
are written as SQL once, so their preparation can be too.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: The statements prepared on each open PostgreSQL session, by its DB-API connection: a new connection
#: is a new key, and one a pool hands out again keeps its statements, as the session does.
_PREPARED: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_PREPARED_LOCK = threading.Lock()
#: A parameter (``%s``) or a literal percent sign (``%%``) in DB-API ``format`` style.
_PLACEHOLDER = re.compile("%[%s]")


def several_per_query(connection: Any) -> bool:
    """Whether ``connection`` (a Django connection) can send several statements as one query string and
    give each one's result: PostgreSQL through psycopg 3 with client-side parameter binding, which
    Django's backend uses unless ``OPTIONS["server_side_binding"]`` is set (psycopg's documentation,
    "Multiple statements in the same query": each result is taken with the cursor's ``nextset()``).
    Not SQLite's cursors, nor psycopg2's, which keep only the last result."""
    return (
        connection.vendor == "postgresql"
        and connection.Database.__name__ == "psycopg"
        and not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")
    )


def in_one_query(
    connection: Any, pieces: Sequence[tuple[str, Sequence[Any]]], take: Callable[[Any, int], T]
) -> list[T]:
    """Send the statements ``pieces`` (``(sql, params)``, each prepared: :func:`statement`) as one query
    string on ``connection`` (where :func:`several_per_query` holds) and give ``take(cursor, index)`` for
    each statement's result, in order."""
    results = []
    with connection.cursor() as cursor:  # connected first: a statement is prepared on the session
        statements = [statement(connection, sql) for sql, _ in pieces]
        cursor.execute("; ".join(statements), [value for _, params in pieces for value in params])
        for index in range(len(pieces)):
            if index:
                cursor.nextset()
            results.append(take(cursor, index))
    return results


def statement(connection: Any, sql: str) -> str:
    """What to send for ``sql`` on ``connection`` (a Django connection): the ``EXECUTE`` of its prepared
    statement on PostgreSQL, ``sql`` itself elsewhere."""
    return _executable(connection, sql) if connection.vendor == "postgresql" else sql


def _executable(connection: Any, sql: str) -> str:
    """``EXECUTE`` of ``sql`` (with ``%s`` placeholders) prepared on ``connection`` (a Django connection
    to PostgreSQL), preparing it first if this session has not.

    The ``PREPARE`` goes through the DB-API connection, like the session's other set-up (``SET TIME
    ZONE``), so a request's statements (and the tests that count them) are the same whichever request
    of a session comes first.
    """
    name, prepare, execute = _forms(sql)
    with _PREPARED_LOCK:
        done = _PREPARED.setdefault(connection.connection, set())
    if name not in done:
        with connection.connection.cursor() as session:
            session.execute(prepare)
        done.add(name)
    return execute


@functools.lru_cache(maxsize=256)
def _forms(sql: str) -> tuple[str, str, str]:
    """The statement's name, its ``PREPARE`` and its ``EXECUTE`` (worked out once per statement: the
    hot reads are a few kB of SQL, and hashing and scanning them cost more than the rest of a call).

    The name carries a digest of the SQL, so a changed statement is prepared anew.
    """
    name = f"crowdqa_{hashlib.sha256(sql.encode()).hexdigest()[:20]}"
    numbered = itertools.count(1)

    def numbered_placeholder(match: re.Match[str]) -> str:
        return "%" if match.group() == "%%" else f"${next(numbered)}"

    prepare = f"PREPARE {name} AS " + _PLACEHOLDER.sub(numbered_placeholder, sql)
    count = next(numbered) - 1
    execute = f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}"
    return name, prepare, execute
