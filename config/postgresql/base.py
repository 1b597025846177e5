"""Django's PostgreSQL backend, with a health check that needs no round trip on a connection in use.

Why: with ``CONN_HEALTH_CHECKS`` Django checks a persistent connection before the first query of every
request that reuses it, so that a connection the server has ended (a restart, ``pg_terminate_backend``,
a proxy's idle timeout) is replaced instead of failing the request. Django's check is a ``SELECT 1``: a
round trip to the server before every request's first query, two of the seven statements a SciQ HIT
(its page and its submit) sends with it, and about 4% of a web worker's CPU under load
(``benchmarks/RESULTS.md``).

A server that ends a session says so on the socket: it sends its ``FATAL`` message and closes the
connection, and the kernel delivers the close even when the server process is killed. A session with
no transaction open receives nothing otherwise (crowdqa does not ``LISTEN``). So a connection is usable
without asking when all of these hold:

- libpq counts it open and idle, outside a transaction (``PGconn.status``, ``transaction_status``);
- nothing has arrived on its socket since its last result (a ``poll`` with no wait);
- it was found usable less than :data:`QUIET_SECONDS` ago, by either check. What the socket cannot tell
  (a connection dropped silently by a NAT or firewall between, a server host that vanished) happens to
  connections left idle for minutes, and those get Django's ``SELECT 1``.

Anything else (data waiting, even an SSL record or a notice; a transaction open; psycopg2, which gives no
libpq handle) gets Django's check. ``is_usable`` is also what Django asks after a query error, where the
same rules hold: a broken connection is ``BAD`` in libpq, an aborted transaction is not idle.
"""

from __future__ import annotations

import select
import time
from typing import Any, Optional

from django.db.backends.postgresql import base

try:
    from psycopg import pq
except ImportError:  # psycopg2: every check is Django's
    pq = None

#: How long after a check a connection with nothing on its socket counts as usable without asking.
QUIET_SECONDS = 30.0


class DatabaseWrapper(base.DatabaseWrapper):
    """Django's PostgreSQL connection with :meth:`is_usable` asking the server only when needed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: When this connection was last found usable (``time.monotonic()``), None when not since it opened.
        self.usable_at: Optional[float] = None

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        self.usable_at = time.monotonic()
        return connection

    def is_usable(self) -> bool:
        now = time.monotonic()
        if self.usable_at is not None and now - self.usable_at < QUIET_SECONDS and self._silent():
            self.usable_at = now
            return True
        usable = super().is_usable()
        self.usable_at = now if usable else None
        return usable

    def _silent(self) -> bool:
        """Whether libpq counts the connection open and idle and nothing waits on its socket."""
        pgconn = getattr(self.connection, "pgconn", None)  # psycopg 3's libpq connection
        if pq is None or pgconn is None:
            return False
        if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return False
        poller = select.poll()
        poller.register(pgconn.socket, select.POLLIN)
        return not poller.poll(0)
