"""/health/ready/: a web host's readiness (database, Redis, the shared storage), never an error text."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from django.test import Client

from config.storage import storages_setting

pytestmark = pytest.mark.django_db


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ready__every_service_answers(client: Client, settings) -> None:  # noqa: ANN001
    settings.REDIS_URL = ""
    response = client.get("/health/ready/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "storage": "ok"}}
    assert "no-cache" in response["Cache-Control"]


def test_ready__over_plain_http_despite_the_https_redirect(client: Client, settings) -> None:  # noqa: ANN001
    settings.SECURE_SSL_REDIRECT, settings.REDIS_URL = True, ""
    assert client.get("/health/ready/").status_code == 200
    assert client.get("/accounts/login/").status_code == 301


def test_ready__redis_down_is_503_without_its_address(client: Client, settings) -> None:  # noqa: ANN001
    port = _closed_port()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    response = client.get("/health/ready/")
    assert response.status_code == 503
    assert response.json()["checks"] == {"database": "ok", "storage": "ok", "redis": "unavailable"}
    assert str(port) not in response.content.decode()


def test_ready__storage_bucket_missing_is_503_without_its_name(
    client: Client,
    settings,
    s3_server,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    settings.REDIS_URL = ""
    url = "s3://bucket-nobody-made/crowdqa"
    settings.CROWDQA_STORAGE_URL = url
    settings.STORAGES, settings.CROWDQA_STORAGE_ERROR = storages_setting(url, tmp_path)
    response = client.get("/health/ready/")
    assert response.status_code == 503 and response.json()["checks"]["storage"] == "unavailable"
    assert "bucket-nobody-made" not in response.content.decode()
    s3_server.client().create_bucket(Bucket="bucket-nobody-made")
    assert client.get("/health/ready/").status_code == 200


def test_ready__only_get(client: Client) -> None:
    assert client.post("/health/ready/").status_code == 405
