"""A webhook receiver on loopback for tests: it answers from a script (fail, hang, succeed) and keeps
every request it got, and checks each signature as docs/webhooks.md tells receivers to."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webhooks.signing import SIGNATURE_HEADER, SignatureError, verify


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    signature_ok: bool


@dataclass
class Receiver:
    """``script`` is consumed one answer per request: an HTTP status, or ``"hang"`` (sleep
    ``hang_seconds`` then 200, i.e. a timeout for a short client timeout); once empty it answers 200."""

    secret: str = ""
    script: list[object] = field(default_factory=list)
    hang_seconds: float = 3.0
    received: list[Received] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_answer(self) -> object:
        with self.lock:
            return self.script.pop(0) if self.script else 200

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(self.received) >= count:
                return True
            time.sleep(0.05)
        return False


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                verify(receiver.secret, self.headers.get(SIGNATURE_HEADER, ""), body)
                ok = True
            except SignatureError:
                ok = False
            receiver.received.append(Received(dict(self.headers.items()), body, ok))
            answer = receiver.next_answer()
            if answer == "hang":
                time.sleep(receiver.hang_seconds)
                answer = 200
            payload = b'{"ok":true}' if answer == 200 else b"receiver says no"
            try:
                self.send_response(int(answer))  # type: ignore[call-overload]
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    return Handler


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A running receiver on 127.0.0.1 (set ``secret`` to the endpoint's before sending)."""
    state = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
