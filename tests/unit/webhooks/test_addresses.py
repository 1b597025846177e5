"""Which URLs a delivery may go to (pure: no Django; name lookups are replaced)."""

from __future__ import annotations

import socket

import pytest

from webhooks.addresses import AddressRefused, check_url


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://api.localhost/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data/",  # a cloud metadata service
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        "http://224.0.0.1/hook",
    ],
)
def test_check_url__refuses_private_and_local_addresses(url: str) -> None:
    with pytest.raises(AddressRefused):
        check_url(url, allow_private=False)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.org/x",
        "file:///etc/passwd",
        "http:///nohost",
        "https://user:pw@example.org/",
        "http://[::1",
    ],
)
def test_check_url__refuses_other_schemes_credentials_and_garbage(url: str) -> None:
    with pytest.raises(AddressRefused):
        check_url(url, allow_private=True)


def test_check_url__allow_private_accepts_loopback() -> None:
    assert check_url("http://127.0.0.1:9/x", allow_private=True) == "127.0.0.1"


def test_check_url__a_name_resolving_to_a_private_address_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("10.0.0.5", 443))])
    with pytest.raises(AddressRefused, match="10.0.0.5"):
        check_url("https://hooks.example.org/x", allow_private=False)
    # when the endpoint is saved the name is not looked up; the delivery looks it up every time
    assert check_url("https://hooks.example.org/x", allow_private=False, resolve=False) == "hooks.example.org"


def test_check_url__a_public_name_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(2, 1, 6, "", ("93.184.215.14", 443))])
    assert check_url("https://hooks.example.org/x", allow_private=False) == "hooks.example.org"


def test_check_url__an_unknown_name_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise socket.gaierror("Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(AddressRefused, match="does not resolve"):
        check_url("https://nowhere.invalid/x", allow_private=False)
