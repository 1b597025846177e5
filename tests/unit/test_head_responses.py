"""HEAD requests get the headers their GET gets and no body (config/head_responses.py).

gunicorn drops a HEAD response's body itself but logs a warning for each one that carries bytes, so the
application must send none: through the whole WSGI handler, every middleware included.
"""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler


def _call(method: str, path: str, **headers: str) -> tuple[str, dict[str, str], bytes]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        **{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()},
    }
    started: list[tuple[str, list[tuple[str, str]]]] = []
    result = WSGIHandler()(
        environ, lambda status, response_headers, exc_info=None: started.append((status, response_headers))
    )
    try:
        body = b"".join(result)
    finally:
        result.close()
    status, response_headers = started[0]
    return status, dict(response_headers), body


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/health/", "/accounts/login/", "/no/such/page/", "/static/crowdqa/hit.css"]
)
def test_head__no_body_and_the_get_s_headers(path: str) -> None:
    get_status, get_headers, get_body = _call("GET", path)
    head_status, head_headers, head_body = _call("HEAD", path)
    assert get_body and head_body == b""
    assert head_status == get_status
    assert head_headers.get("Content-Type") == get_headers.get("Content-Type")
    if "Content-Length" in get_headers:
        assert head_headers["Content-Length"] == get_headers["Content-Length"] == str(len(get_body))


@pytest.mark.django_db
def test_head__of_a_gzipped_page_keeps_its_encoding_and_sends_nothing() -> None:
    status, headers, body = _call("HEAD", "/accounts/login/", **{"Accept-Encoding": "gzip"})
    assert status.startswith("200") and body == b""
    assert headers.get("Content-Encoding") == "gzip" and int(headers["Content-Length"]) > 0
