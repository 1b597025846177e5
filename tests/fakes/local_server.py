"""A threaded HTTP server on 127.0.0.1 that a fake platform runs behind (shared by the fake servers)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class FakeHTTPServer(ThreadingHTTPServer):
    """The HTTP server a fake runs in; handlers reach the fake as ``self.server.fake``."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], fake: Any) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.fake = fake


class LocalServer:
    """Serve ``fake`` with ``handler`` on a free loopback port in a background thread.

    Handlers reach the fake as ``self.server.fake``. Use as a context manager, or ``start()``/``stop()``.
    """

    def __init__(self, handler: type[BaseHTTPRequestHandler], fake: Any, name: str) -> None:
        self._server = FakeHTTPServer(handler, fake)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )

    def start(self) -> Self:
        """Start serving; return self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def drop_connection(handler: BaseHTTPRequestHandler, kind: str, stall_seconds: float) -> None:
    """End a request without an answer: ``reset`` sends a TCP RST, ``timeout`` stalls first.

    Any other kind (``lost_reply``) closes the connection cleanly; the client sees it closed without
    a response, as when a reply is lost on the way.
    """
    handler.close_connection = True
    if kind == "timeout":
        time.sleep(stall_seconds)
    try:
        if kind == "reset":
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.connection.close()
        else:
            handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:  # the client already gave up
        return
