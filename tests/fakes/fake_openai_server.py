"""A local OpenAI-compatible server for tests: ``POST /v1/chat/completions`` on 127.0.0.1.

Each request takes the next scripted :class:`Reply` (the last one repeats), so a test can script
success, HTTP errors, slow answers (timeouts) and garbage bodies. Every request body is recorded.

    with FakeOpenAIServer([Reply(text="Score: 1/2")]) as server:
        backend = OpenAIChatBackend(server.api_base, "fake-model", timeout=1)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a completion with ``text``, or ``status`` / ``body`` / ``delay`` overrides."""

    text: str = ""
    status: int = 200
    body: Optional[bytes] = None  # raw body instead of a completion (garbage tests)
    delay: float = 0.0  # seconds to wait before answering (timeout tests)


class FakeOpenAIServer:
    """Serve scripted replies; use as a context manager."""

    def __init__(
        self, replies: list[Reply], responder: Optional[Callable[[dict[str, Any]], str]] = None
    ) -> None:
        """Args:
        replies: answers in order; the last one repeats.
        responder: when given, computes the completion text from the request JSON (status 200).
        """
        self.replies = list(replies) or [Reply()]
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        """The ``LLM_API_BASE`` to give a client (``http://127.0.0.1:<port>/v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            index = min(len(self.requests) - 1, len(self.replies) - 1)
        if self.responder is not None:
            return Reply(text=self.responder(request))
        return self.replies[index]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence test output
                return

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": "not found"}')
                    return
                try:
                    request = json.loads(raw)
                except ValueError:
                    self._send(400, b'{"error": "bad json"}')
                    return
                reply = fake._next(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.body is not None or reply.status != 200:
                    self._send(
                        reply.status, reply.body if reply.body is not None else b'{"error": "scripted"}'
                    )
                    return
                completion = {
                    "id": f"chatcmpl-{len(fake.requests)}",
                    "object": "chat.completion",
                    "model": request.get("model"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.text},
                            "finish_reason": "stop",
                        }
                    ],
                }
                self._send(200, json.dumps(completion).encode())

            def _send(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler
