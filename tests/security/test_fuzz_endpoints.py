"""No input gives a 5xx on any endpoint: each attack the issue reproduced, replayed, then a bounded fuzz.

The replays (each failed with a 500 before the request guard, config/request_guard.py, and the fixes it
names): a form body in another charset on any URL with the csrftoken cookie every visitor gets;
malformed multipart bodies; NUL bytes and lone surrogates in review-queue filters, reject and block
reasons and invite labels; a ``next`` that is not a URL; a signed webhook holding NaN or Infinity.
``benchmarks/fuzz_endpoints.py`` runs the same fuzz at scale.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings

from annotation.models import Assignment
from crowd.invites import Invite
from crowd.models import Worker
from crowd.providers.prolific.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from tests.security.fuzzing import WEBHOOK_SECRET, FuzzRequest, World, build_world, requests, send

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(settings: Any) -> World:
    settings.PROLIFIC_WEBHOOK_SECRET = WEBHOOK_SECRET
    return build_world()


def _csrf_client(world: World, visitor: str) -> tuple[Client, dict[str, str]]:
    client = world.clients[visitor]
    return client, {"X-CSRFToken": client.cookies["csrftoken"].value}


CHARSETS = ("utf-16", "utf-32", "x-no-such-charset", "latin-1", '"')
PATHS = ("/work/login/", "/accounts/login/", "/review/decide/", "/no-such-page/")


def test_charset__a_body_in_another_charset_is_a_400(world: World) -> None:
    client, headers = _csrf_client(world, "anon")
    body = "username=a&password=b".encode("utf-16")
    for charset in CHARSETS:
        for path in PATHS:
            content_type = f"application/x-www-form-urlencoded; charset={charset}"
            response = client.generic("POST", path, body, content_type=content_type, headers=headers)
            assert response.status_code == 400, (charset, path)
            assert b"UTF-8" in response.content


def test_charset__utf8_spelled_any_way_is_taken(world: World) -> None:
    client, headers = _csrf_client(world, "anon")
    for charset in ("utf-8", "UTF8", "utf_8", "us-ascii"):
        response = client.generic(
            "POST",
            "/work/login/",
            b"username=a&password=b",
            content_type=f"application/x-www-form-urlencoded; charset={charset}",
            headers=headers,
        )
        assert response.status_code == 200, charset  # the sign-in page again, with its error


MALFORMED = (
    ("b; charset=utf-16", b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n\xff\xfe\r\n--b--'),
    ("b; charset=x-none", b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\nzz\r\n--b--'),
    ("b", b'--b\r\nContent-Disposition: form-data; name="x"\r\n'),  # headers never end
    ("", b"--\r\n\r\n"),
    ("b" * 300, b"x"),  # boundary longer than RFC 2046 allows
    ("b", b'--b\r\nContent-Disposition: form-data; name="x"; filename="\x00"\r\n\r\nzz\r\n--b--'),
    ("b", b"--b\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!!\r\n--b--"),
)


def test_multipart__malformed_bodies_are_a_400(world: World) -> None:
    for boundary, body in MALFORMED:
        for visitor, path in (
            ("anon", "/work/login/"),
            ("researcher", "/review/decide/"),
            ("anon", f"/a/{world.ids['token']}/draft/"),
        ):
            client, headers = _csrf_client(world, visitor)
            content_type = f"multipart/form-data; boundary={boundary}"
            response = client.generic("POST", path, body, content_type=content_type, headers=headers)
            assert response.status_code < 500, (boundary, body, path, response.status_code)


def _post_raw(client: Client, path: str, data: dict[str, str], headers: dict[str, str]) -> Any:
    """POST ``data`` form-encoded as a hostile client would, lone surrogates included (as UTF-8 bytes)."""
    body = "&".join(f"{quote(k)}={quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in data.items())
    return client.generic(
        "POST", path, body.encode(), content_type="application/x-www-form-urlencoded", headers=headers
    )


def test_nul_and_surrogates__filters_reasons_and_labels(world: World) -> None:
    client, headers = _csrf_client(world, "researcher")
    for value in ("a\x00b", "\ud800", "x\udfffy"):
        quoted = quote(value.encode("utf-8", "surrogatepass"))
        query = "&".join(f"{name}={quoted}" for name in ("flag", "worker", "type", "status", "batch"))
        assert client.get(f"/review/?{query}").status_code == 200
        response = _post_raw(
            client,
            f"/batches/{world.ids['local_batch']}/invites/",
            {"count": "1", "label": f"lab{value}el"},
            headers,
        )
        assert response.status_code == 200
    assert Invite.objects.filter(label="lababel").exists()
    worker = Worker.objects.get(pk=world.ids["local_worker"])
    response = client.post(
        f"/workers/{worker.pk}/block/", {"reason": "spam\x00med", "next": "/review/"}, headers=headers
    )
    assert response.status_code == 302 and response["Location"] == "/review/"
    worker.refresh_from_db()
    assert worker.blocked and worker.block_reason == "spammed"
    submitted = world.ids["submitted"]
    response = client.post(
        f"/assignments/{submitted}/review/",
        {"action": "reject", "reason": "Not supported\x00 by the passage."},
        headers=headers,
    )
    assert response.status_code == 302
    assignment = Assignment.objects.get(pk=submitted)
    assert (
        assignment.status == Assignment.Status.REJECTED
        and assignment.feedback == "Not supported by the passage."
    )


def test_next__anything_but_a_local_url_goes_to_the_default(world: World) -> None:
    for target in ("annotation:home", "not a url", "http://evil.example/", "/ok\r\nX: 1", "//evil/"):
        _goes_to_the_default(world, target)


def _goes_to_the_default(world: World, target: str) -> None:
    client, headers = _csrf_client(world, "researcher")
    decided = client.post("/review/decide/", {"action": "approve", "next": target}, headers=headers)
    assert decided.status_code == 302 and decided["Location"] == "/review/"
    blocked = client.post(
        f"/workers/{world.ids['local_worker']}/block/", {"action": "unblock", "next": target}, headers=headers
    )
    assert blocked.status_code == 302 and blocked["Location"] == "/"


def test_next__a_local_path_is_followed(world: World) -> None:
    client, headers = _csrf_client(world, "researcher")
    decided = client.post(
        "/review/decide/", {"action": "approve", "next": "/review/?flag=x"}, headers=headers
    )
    assert decided["Location"] == "/review/?flag=x"


def test_webhook__a_form_body_is_refused_not_a_500(world: World) -> None:
    """The guard parses form bodies before the webhook reads its raw body: it must still be readable."""
    client = world.clients["anon"]
    for content_type, body in (
        (
            "multipart/form-data; boundary=b",
            b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--b--',
        ),
        ("application/x-www-form-urlencoded", b"event_type=x&resource_id=y"),
    ):
        response = client.generic("POST", "/crowd/webhooks/prolific/", body, content_type=content_type)
        assert response.status_code in (400, 403), response.status_code


def test_webhook__signed_json_with_nan_or_infinity_is_a_400(world: World) -> None:
    for constant in (b"NaN", b"Infinity", b"-Infinity", b"1e999"):
        _webhook_refuses(world, constant)


def _webhook_refuses(world: World, constant: bytes) -> None:
    body = b'{"event_type": "submission.status.change", "resource_id": "r1", "x": ' + constant + b"}"
    stamp = str(int(time.time()))
    response = world.clients["anon"].generic(
        "POST",
        "/crowd/webhooks/prolific/",
        body,
        content_type="application/json",
        headers={SIGNATURE_HEADER: sign(WEBHOOK_SECRET, stamp, body), TIMESTAMP_HEADER: stamp},
    )
    assert response.status_code == 400 and response.json()["error"] == "bad_body"


FUZZ = hsettings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@FUZZ
@given(request=requests())
def test_fuzz__every_endpoint_never_5xx(world: World, request: FuzzRequest) -> None:
    status, _ = send(world, request)
    assert status < 500, request.describe()
