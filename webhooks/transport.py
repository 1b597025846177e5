"""A requests session that connects only to the addresses :func:`webhooks.addresses.vet` checked.

Checking a host's addresses and then letting ``requests`` resolve the name again leaves a window: a DNS
server can answer a public address to the check and ``127.0.0.1`` to the connection (DNS rebinding). The
adapter here closes it by rewriting each request's URL to a vetted address, so the name is never looked up
again, while the request still names the host: the ``Host`` header carries the name, and for https the TLS
server name (SNI) and the certificate check use the name too (urllib3's ``server_hostname`` and
``assert_hostname`` pool options), so certificate verification is as strict as for the name itself.

When the name has several addresses they are tried in resolver order, moving on only when a connection
could not be opened (nothing was sent), as ``socket.create_connection`` does. Pure: no Django.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NewConnectionError

from webhooks.addresses import Target


def _netloc(address: str, port: int | None) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"{host}:{port}" if port is not None else host


def _not_connected(exc: requests.ConnectionError) -> bool:
    """Whether the error happened before a connection was open (so no byte of the request was sent)."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0] if exc.args else None, "reason", None)
    return isinstance(reason, NewConnectionError)


class PinnedAdapter(HTTPAdapter):
    """Sends requests for ``target.host`` to ``target.addresses`` only; refuses any other host."""

    def __init__(self, target: Target) -> None:
        self.target = target
        super().__init__(max_retries=0)

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        original = str(request.url)
        parts = urlsplit(original)
        if parts.hostname != self.target.host or parts.scheme != self.target.scheme:
            raise requests.exceptions.InvalidURL(f"{original} is not the vetted {self.target.url}")
        request.headers["Host"] = _netloc(self.target.host, parts.port)
        last: requests.ConnectionError | None = None
        for address in self.target.addresses:
            request.url = urlunsplit(parts._replace(netloc=_netloc(address, parts.port)))
            try:
                response = super().send(request, **kwargs)
                response.url = original
                return response
            except requests.ConnectionError as exc:
                if not _not_connected(exc):
                    raise
                last = exc
            finally:
                request.url = original
        assert last is not None  # a Target always has an address
        raise last

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: Any, cert: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
        if host_params.get("scheme") == "https":
            pool_kwargs["server_hostname"] = self.target.host
            pool_kwargs["assert_hostname"] = self.target.host
        return host_params, pool_kwargs


def pinned_session(target: Target) -> requests.Session:
    """A session whose http(s) requests go to ``target``'s vetted addresses (close it after use)."""
    session = requests.Session()
    adapter = PinnedAdapter(target)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
