"""Where a delivery may go: ``http(s)`` URLs whose host resolves only to public addresses.

A webhook URL is typed by a researcher and fetched by the server, so without this check an endpoint could
make the server call its own private services (``http://127.0.0.1:6379``, a cloud metadata address, the
database host): the server-side request forgery Stripe and GitHub guard against. Loopback, private,
link-local, reserved and multicast addresses are refused unless ``WEBHOOK_ALLOW_PRIVATE`` is on (local
development, tests, a receiver inside the lab's own network).

:func:`vet` resolves the host once per attempt and returns the addresses it checked; the delivery then
connects to those addresses only (:mod:`webhooks.transport`), never resolving the name again. A name whose
DNS answers a public address to the check and a private one to the connection (DNS rebinding) therefore
cannot steer a delivery inside. Pure: no Django.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

SCHEMES = ("http", "https")


class AddressRefused(ValueError):
    """The URL is malformed, not http(s), or its host is (or resolves to) a non-public address."""


class Unresolvable(AddressRefused):
    """The host name does not resolve now (DNS down or the name gone): worth another attempt later."""


@dataclass(frozen=True)
class Target:
    """A vetted URL: its host name, port, and the addresses (resolver order) a delivery may connect to."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _parse(url: str, allow_private: bool) -> tuple[str, str, int]:
    """Check the URL's shape; returns (scheme, host, port)."""
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
    if not allow_private and (host == "localhost" or host.endswith(".localhost")):
        raise AddressRefused(f"{host} is this server (WEBHOOK_ALLOW_PRIVATE is off)")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _refuse_private(host: str, addresses: list[str]) -> None:
    private = [a for a in addresses if not _public(a)]
    if private:
        raise AddressRefused(
            f"{host} is a private or local address ({', '.join(private)}); WEBHOOK_ALLOW_PRIVATE is off"
        )


def vet(url: str, allow_private: bool) -> Target:
    """Resolve ``url``'s host once and check every address it resolves to (a delivery attempt).

    Every address must be public (unless ``allow_private``): one private answer among public ones refuses
    the URL, since the connection could otherwise land on it.

    Raises:
        Unresolvable: the name does not resolve (the attempt may be retried).
        AddressRefused: why the URL may not be used.
    """
    scheme, host, port = _parse(url, allow_private)
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise Unresolvable(f"{host} does not resolve: {exc}") from exc
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise Unresolvable(f"{host} resolves to no address")
    if not allow_private:
        _refuse_private(host, addresses)
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=tuple(addresses))


def check_url(url: str, allow_private: bool, resolve: bool = True) -> str:
    """Check ``url`` as a webhook target; returns its host.

    Args:
        url: the endpoint's URL.
        allow_private: accept hosts on loopback and private networks (``WEBHOOK_ALLOW_PRIVATE``).
        resolve: look the host name up (as :func:`vet`); without it only literal addresses and
            ``localhost`` are judged (when an endpoint is saved, where the name may not resolve yet).

    Raises:
        AddressRefused: why the URL may not be used.
    """
    if resolve:
        return vet(url, allow_private).host
    _, host, _ = _parse(url, allow_private)
    literal = _literal(host)
    if literal is not None and not allow_private:
        _refuse_private(host, [literal])
    return host
