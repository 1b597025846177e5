"""Where a delivery may go: ``http(s)`` URLs whose host resolves only to public addresses.

A webhook URL is typed by a researcher and fetched by the server, so without this check an endpoint could
make the server call its own private services (``http://127.0.0.1:6379``, a cloud metadata address, the
database host): the server-side request forgery Stripe and GitHub guard against. Loopback, private,
link-local, reserved and multicast addresses are refused unless ``WEBHOOK_ALLOW_PRIVATE`` is on (local
development, tests, a receiver inside the lab's own network). The host is resolved again before every
attempt, so a name that starts resolving to a private address is caught when it is used. Pure: no Django.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

SCHEMES = ("http", "https")


class AddressRefused(ValueError):
    """The URL is malformed, not http(s), or its host is (or resolves to) a non-public address."""


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_url(url: str, allow_private: bool, resolve: bool = True) -> str:
    """Check ``url`` as a webhook target; returns its host.

    Args:
        url: the endpoint's URL.
        allow_private: accept hosts on loopback and private networks (``WEBHOOK_ALLOW_PRIVATE``).
        resolve: look the host name up (at delivery); without it only literal addresses and
            ``localhost`` are judged (when an endpoint is saved, where the name may not resolve yet).

    Raises:
        AddressRefused: why the URL may not be used.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise AddressRefused(f"{url!r} is not a valid URL: {exc}") from exc
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise AddressRefused(f"{url!r} is not an http(s) URL with a host")
    if parts.username or parts.password:
        raise AddressRefused("a webhook URL may not carry a user name or password")
    host = parts.hostname
    if allow_private:
        return host
    if host == "localhost" or host.endswith(".localhost"):
        raise AddressRefused(f"{host} is this server (WEBHOOK_ALLOW_PRIVATE is off)")
    try:
        literal = [str(ipaddress.ip_address(host))]
    except ValueError:
        literal = []
    if literal:
        addresses = literal
    elif resolve:
        try:
            infos = socket.getaddrinfo(host, port or (443 if parts.scheme == "https" else 80))
        except OSError as exc:
            raise AddressRefused(f"{host} does not resolve: {exc}") from exc
        addresses = sorted({info[4][0] for info in infos})
    else:
        return host
    private = [a for a in addresses if not _public(a)]
    if private:
        raise AddressRefused(
            f"{host} is a private or local address ({', '.join(private)}); WEBHOOK_ALLOW_PRIVATE is off"
        )
    return host
