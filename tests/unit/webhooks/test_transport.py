"""Deliveries connect to the addresses the check vetted, never to what the name resolves to later.

No real DNS: ``socket.getaddrinfo`` is replaced by a resolver that answers a "public" address to the
first lookup of ``hooks.example.test`` and a private one to every later lookup (DNS rebinding). The
"public" receiver listens on 127.0.0.2 (the test counts that address as public) and the "internal"
service on 127.0.0.1, on the same port, so a connection that resolved the name again would reach the
internal one. Pure: no Django.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from webhooks import addresses
from webhooks.addresses import AddressRefused, Target, Unresolvable, vet
from webhooks.transport import pinned_session

NAME = "hooks.example.test"
PUBLIC = "127.0.0.2"  # stands for a public address in these tests
INTERNAL = "127.0.0.1"


@dataclass
class Server:
    address: str
    port: int = 0
    hosts: list[str] = field(default_factory=list)
    sni: list[str | None] = field(default_factory=list)
    httpd: ThreadingHTTPServer | None = None


def _start(server: Server, context: ssl.SSLContext | None = None) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            server.hosts.append(self.headers.get("Host", ""))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(server.address.encode()[:2])

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    httpd = ThreadingHTTPServer((server.address, server.port), Handler)
    httpd.daemon_threads = True
    if context is not None:
        context.sni_callback = lambda sock, name, ctx: server.sni.append(name)  # type: ignore[assignment,misc]
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    server.port = httpd.server_address[1]
    server.httpd = httpd
    threading.Thread(target=httpd.serve_forever, daemon=True).start()


def _pair(context: Callable[[], ssl.SSLContext | None] = lambda: None) -> tuple[Server, Server]:
    """A public and an internal server on the same port (retry if the port is taken on 127.0.0.1)."""
    for _ in range(20):
        public = Server(PUBLIC)
        _start(public, context())
        internal = Server(INTERNAL, port=public.port)
        try:
            _start(internal, context())
        except OSError:
            assert public.httpd is not None
            public.httpd.shutdown()
            public.httpd.server_close()
            continue
        return public, internal
    raise RuntimeError("no free port pair")


@pytest.fixture
def rebinding(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The rebinding resolver; returns the log of names it was asked (IP literals pass through)."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def resolve(host: str, port: object, *args: object, **kwargs: object) -> list[tuple]:  # type: ignore[type-arg]
        if host != NAME:
            return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        asked.append(host)
        answer = PUBLIC if len(asked) == 1 else INTERNAL
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer, int(port)))]  # type: ignore[call-overload]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(addresses, "_public", lambda address: address == PUBLIC)
    return asked


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    public, internal = _pair()
    yield public, internal
    for server in (public, internal):
        assert server.httpd is not None
        server.httpd.shutdown()
        server.httpd.server_close()


def test_vet__refuses_the_private_answer(rebinding: list[str]) -> None:
    assert vet(f"http://{NAME}:9/h", allow_private=False).addresses == (PUBLIC,)
    with pytest.raises(AddressRefused, match=INTERNAL):
        vet(f"http://{NAME}:9/h", allow_private=False)


def test_vet__an_unknown_name_is_unresolvable(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise socket.gaierror("Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", fail)
    with pytest.raises(Unresolvable):
        vet("https://nowhere.invalid/x", allow_private=False)


def test_plain_requests_after_the_check__reaches_the_internal_service(
    rebinding: list[str], servers: tuple[Server, Server]
) -> None:
    """The window the pinned session closes: check, then a second lookup by requests."""
    public, internal = servers
    url = f"http://{NAME}:{public.port}/hooks"
    vet(url, allow_private=False)
    requests.post(url, data=b"{}", timeout=5)
    assert internal.hosts and not public.hosts


def test_pinned_session__connects_to_the_vetted_address_with_the_name_as_host(
    rebinding: list[str], servers: tuple[Server, Server]
) -> None:
    public, internal = servers
    url = f"http://{NAME}:{public.port}/hooks"
    target = vet(url, allow_private=False)
    with pinned_session(target) as session:
        for _ in range(2):  # a second request on the session still does not look the name up
            answer = session.post(url, data=b"{}", timeout=5)
            assert answer.status_code == 200 and answer.url == url
    assert public.hosts == [f"{NAME}:{public.port}"] * 2
    assert internal.hosts == []
    assert rebinding == [NAME]  # resolved once, by the check


def test_pinned_session__moves_on_when_an_address_refuses_the_connection(
    servers: tuple[Server, Server],
) -> None:
    public, internal = servers
    closed = socket.socket()
    closed.bind(("127.0.0.3", public.port))  # bound, not listening: the connection is refused
    try:
        target = Target(f"http://{NAME}:{public.port}/h", "http", NAME, public.port, ("127.0.0.3", PUBLIC))
        with pinned_session(target) as session:
            assert session.post(target.url, data=b"{}", timeout=5).status_code == 200
    finally:
        closed.close()
    assert len(public.hosts) == 1 and internal.hosts == []


def test_pinned_session__refuses_another_host(servers: tuple[Server, Server]) -> None:
    public, _ = servers
    target = Target(f"http://{NAME}:{public.port}/h", "http", NAME, public.port, (PUBLIC,))
    with pinned_session(target) as session, pytest.raises(requests.exceptions.InvalidURL):
        session.post(f"http://elsewhere.test:{public.port}/h", data=b"{}", timeout=5)
    assert public.hosts == []


def _certificate(tmp: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (also its own CA); returns (cert, key) files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / f"{name}.pem", tmp / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    assert ipaddress.ip_address(PUBLIC)  # the certificate names the host, never the address
    return cert_file, key_file


@pytest.mark.parametrize("certificate_name", [NAME, "other.example.test"])
def test_pinned_session__https_keeps_sni_and_verifies_the_certificate_for_the_name(
    tmp_path: Path, rebinding: list[str], certificate_name: str
) -> None:
    cert_file, key_file = _certificate(tmp_path, certificate_name)

    def context() -> ssl.SSLContext:
        made = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        made.load_cert_chain(cert_file, key_file)
        return made

    public, internal = _pair(context)
    try:
        url = f"https://{NAME}:{public.port}/hooks"
        target = vet(url, allow_private=False)
        with pinned_session(target) as session:
            if certificate_name == NAME:
                assert session.post(url, data=b"{}", timeout=5, verify=str(cert_file)).status_code == 200
                assert public.hosts == [f"{NAME}:{public.port}"]
            else:
                with pytest.raises(requests.exceptions.SSLError):
                    session.post(url, data=b"{}", timeout=5, verify=str(cert_file))
                assert public.hosts == []
        assert public.sni and set(public.sni) == {NAME}
        assert internal.hosts == [] and internal.sni == []
    finally:
        for server in (public, internal):
            assert server.httpd is not None
            server.httpd.shutdown()
            server.httpd.server_close()
