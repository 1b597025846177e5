"""A real S3 server for tests: moto's threaded server on loopback, reached by boto3 over HTTP.

``s3_server`` starts it and points this process's boto3 at it the way a maintainer points crowdqa at
MinIO (``AWS_ENDPOINT_URL_S3``), with dummy credentials and no shared AWS config, so no test can reach
AWS. Moto keeps its buckets in this process, so the fixture empties them when the test ends.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
)


@dataclass
class S3Server:
    """The running server: its endpoint, a client with the test credentials, and IAM checks on demand."""

    endpoint: str
    monkeypatch: pytest.MonkeyPatch

    def client(self, service: str = "s3", **kwargs: Any) -> Any:
        """A boto3 client of this server (the environment's credentials unless given)."""
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name="us-east-1", **kwargs)

    def _moto_api(self, path: str, body: str = "") -> dict[str, Any]:
        request = urllib.request.Request(
            self.endpoint + path, data=body.encode(), method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read() or b"{}")

    def use_credentials(self, access_key: str, secret_key: str) -> None:
        """Make boto3 in this process sign with these credentials from now on."""
        self.monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
        self.monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret_key)

    def enforce_iam(self) -> None:
        """From now on the server checks every request's credentials and IAM policies, as AWS does."""
        self._moto_api("/moto-api/reset-auth", "0")

    def stop_enforcing_iam(self) -> None:
        self._moto_api("/moto-api/reset-auth", "inf")

    def reset(self) -> None:
        """Forget every bucket, user and key."""
        self._moto_api("/moto-api/reset")


@contextmanager
def running_s3_server(monkeypatch: pytest.MonkeyPatch, scratch: Path) -> Iterator[S3Server]:
    """Run moto's S3 server on 127.0.0.1 (a free port) and point boto3 at it through ``monkeypatch``
    (``AWS_ENDPOINT_URL_S3``, dummy credentials, no shared AWS config: ``scratch`` holds none)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    none = scratch / "absent"
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(none))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(none))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://{host}:{port}")
    s3 = S3Server(endpoint=f"http://{host}:{port}", monkeypatch=monkeypatch)
    s3.use_credentials("testing", "testing")
    try:
        yield s3
    finally:
        s3.stop_enforcing_iam()
        s3.reset()
        server.stop()


@pytest.fixture
def s3_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 (a free port); boto3 here reaches it through ``AWS_ENDPOINT_URL_S3``."""
    with running_s3_server(monkeypatch, Path(tmp_path_factory.mktemp("aws"))) as s3:
        yield s3
