"""A property-based fuzz of every endpoint that takes input, shared by the test suite and the benchmark.

:func:`build_world` makes the objects the endpoints act on (local, MTurk and Prolific batches, an open
and a submitted assignment with their signed links, a researcher, a local worker); :func:`requests`
is a hypothesis strategy of hostile requests against them (text with NUL bytes, lone surrogates and
odd digits in every field, bodies in other charsets, malformed multipart, JSON with NaN); :func:`send`
sends one through Django's test client with CSRF enforced, as a browser would, and returns its status.

``tests/security/test_fuzz_endpoints.py`` runs a few hundred requests in CI;
``benchmarks/fuzz_endpoints.py`` runs tens of thousands and lists every 5xx with its request.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from django.test import Client
from hypothesis import strategies as st

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent
from crowd.providers.prolific.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from tests.factories import make_researcher, make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

WEBHOOK_SECRET = "whsec-for-fuzzing"
PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)
HOSTILE = [
    "\x00",
    "a\x00b",
    "\ud800",
    "x\udfffy",
    "²",
    "٣",
    "1e999",
    "nan",
    "Infinity",
    "-1",
    "9" * 30,
    "İ" * 50,
    "../../etc/passwd",
    "<script>alert(1)</script>",
    "javascript:alert(1)",
    "//evil.example/",
    "/\x00/",
    "/ok\r\nSet-Cookie: x=1",
    "annotation:home",
    "",
    " ",
]
TEXT = st.text(max_size=120) | st.sampled_from(HOSTILE) | st.text(alphabet=st.characters(), max_size=40)
CHARSETS = ["utf-8", "UTF8", "latin-1", "utf-16", "utf-32", "x-no-such-charset", "shift_jis", "cp1252", '"']


@dataclass
class World:
    """The objects the fuzzed endpoints act on, and a client per kind of visitor."""

    ids: dict[str, Any]
    clients: dict[str, Client] = field(default_factory=dict)


@dataclass(frozen=True)
class Endpoint:
    """One route: method, path (``{name}`` filled from ``World.ids``), visitor and field names."""

    name: str
    method: str
    path: str
    visitor: str
    fields: tuple[str, ...]


ENDPOINTS = (
    Endpoint(
        "arrive",
        "GET",
        "/hit/{batch_any}/",
        "anon",
        ("assignmentId", "hitId", "workerId", "turkSubmitTo", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID"),
    ),
    Endpoint("task", "POST", "/a/{token}/", "anon", ("passage", "question", "answer", "draft_revisions")),
    Endpoint(
        "draft", "POST", "/a/{token}/draft/", "anon", ("passage", "question", "answer", "draft_revisions")
    ),
    Endpoint("active", "POST", "/a/{token}/active/", "anon", ("active_page", "active_ms")),
    Endpoint("locate-span", "POST", "/a/{token}/locate-span/", "anon", ("text",)),
    Endpoint("model-check", "POST", "/a/{token}/model-check/", "anon", ("card", "question", "answer")),
    Endpoint("model-check-poll", "GET", "/a/{token}/model-check/", "anon", ("card", "key")),
    Endpoint("validate-verdicts", "POST", "/batches/{local_batch}/validate-verdicts/", "researcher", ("x",)),
    Endpoint("consent", "POST", "/a/{token}/consent/", "anon", ("consent",)),
    Endpoint("return", "POST", "/a/{token_other}/return/", "anon", ("x",)),
    Endpoint("preview", "GET", "/hit/preview/{hit}/", "anon", ("t", "token")),
    Endpoint("worker-login", "POST", "/work/login/", "anon", ("username", "password", "next")),
    Endpoint("login", "POST", "/accounts/login/", "anon", ("username", "password", "next")),
    Endpoint("invite", "GET", "/work/invite/{text}/", "anon", ("next",)),
    Endpoint("next-hit", "POST", "/work/batches/{local_batch}/next/", "worker", ("x",)),
    Endpoint("worker-home", "GET", "/work/", "worker", ("page",)),
    Endpoint("review-queue", "GET", "/review/", "researcher", ("flag", "batch", "worker", "type", "status")),
    Endpoint(
        "review-decide", "POST", "/review/decide/", "researcher", ("action", "reason", "assignment", "next")
    ),
    Endpoint(
        "review",
        "POST",
        "/assignments/{submitted}/review/",
        "researcher",
        ("action", "reason", "confirm_no_work"),
    ),
    Endpoint(
        "bonus",
        "POST",
        "/assignments/{submitted}/bonus/",
        "researcher",
        ("cents", "reason", "confirm_no_work"),
    ),
    Endpoint("block", "POST", "/workers/{local_worker}/block/", "researcher", ("action", "reason", "next")),
    Endpoint(
        "by-skill",
        "POST",
        "/batches/{local_batch}/by-skill/",
        "researcher",
        ("action", "measure", "threshold", "min_labels", "reason", "subject", "message"),
    ),
    Endpoint(
        "bonus-top",
        "POST",
        "/batches/{local_batch}/bonuses/top/",
        "researcher",
        ("top", "measure", "min_labels", "amount", "reason"),
    ),
    Endpoint(
        "invites", "POST", "/batches/{local_batch}/invites/", "researcher", ("count", "label", "is_expert")
    ),
    Endpoint("batch-status", "POST", "/batches/{local_batch}/status/", "researcher", ("action",)),
    Endpoint(
        "batch-new",
        "POST",
        "/batches/new/",
        "researcher",
        (
            "kind",
            "provider",
            "name",
            "corpus",
            "documents",
            "limit",
            "assignments",
            "reward",
            "title",
            "description",
            "model_loop",
            "model_system",
            "model_judge",
            "action",
            "estimated",
        ),
    ),
    Endpoint(
        "message", "POST", "/batches/{local_batch}/message/", "researcher", ("to", "subject", "message")
    ),
    Endpoint(
        "upload",
        "POST",
        "/corpora/upload/",
        "researcher",
        ("layout", "target", "new_name", "existing", "min_paragraph_chars", "files"),
    ),
    Endpoint("upload-job", "GET", "/corpora/upload/jobs/{text}/", "researcher", ("page",)),
    Endpoint("home", "GET", "/", "researcher", ("page", "q")),
    Endpoint("batch", "GET", "/batches/{local_batch}/", "researcher", ("page",)),
    Endpoint("corpus", "GET", "/corpora/tb/", "researcher", ("page",)),
    Endpoint("releases", "GET", "/releases/", "researcher", ("page",)),
    Endpoint(
        "release-new",
        "POST",
        "/releases/new/",
        "researcher",
        (
            "name",
            "version",
            "source",
            "corpus",
            "batches",
            "ratio_train",
            "ratio_val",
            "ratio_test",
            "seed",
            "formats",
            "privacy_allow",
        ),
    ),
    Endpoint("benchmarks", "GET", "/benchmarks/", "researcher", ("page",)),
    Endpoint(
        "webhook",
        "POST",
        "/crowd/webhooks/prolific/",
        "anon",
        ("event_type", "resource_id", "status", "study_id"),
    ),
)
ENCODINGS = ("form", "form", "form", "query", "multipart", "charset", "bad-multipart", "json", "raw")


def build_world() -> World:
    """Create the objects the endpoints act on (call inside a test database)."""
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(8) for text in PASSAGES])
    batches: dict[str, Batch] = {}
    for provider in ("local", "mturk", "prolific"):
        batch = create_batch(
            BatchSpec(kind="sciq_question", corpus="tb", provider=provider, limit=2, assignments=3)
        )
        batch.platform_ref = "STUDY"
        batch.save()
        batch.hits.update(platform_ref="HIT")
        batch.publish()
        batches[provider] = batch
    local = batches["local"]
    open_one = claim_next(local, make_worker("fuzz-open"))
    Consent.objects.create(worker=open_one.worker, batch=local)
    other = claim_next(local, make_worker("fuzz-other"))
    Consent.objects.create(worker=other.worker, batch=local)
    done = claim_next(local, make_worker("fuzz-done"))
    Assignment.objects.filter(pk=done.pk).update(
        status=Assignment.Status.SUBMITTED, answers={"question": "q?", "answer": "a"}
    )
    researcher = make_researcher("fuzz-researcher", is_superuser=True, is_staff=True)
    from django.contrib.auth import get_user_model

    worker_user = get_user_model().objects.create_user("fuzz-worker", password="pw-for-fuzz-worker")
    make_worker("fuzz-signed-in", user=worker_user)
    ids = {
        "batch_any": [b.pk for b in batches.values()],
        "local_batch": local.pk,
        "token": hit_links.token_for(open_one),
        "token_other": hit_links.token_for(other),
        "submitted": done.pk,
        "local_worker": done.worker_id,
        "hit": local.hits.order_by("pk").first().pk,
        "assignments": [open_one.pk, other.pk, done.pk],
    }
    world = World(ids=ids)
    for visitor in ("anon", "worker", "researcher"):
        client = Client(enforce_csrf_checks=True)
        client.get("/work/login/")  # every visitor gets the csrftoken cookie
        world.clients[visitor] = client
    world.clients["researcher"].force_login(researcher)
    world.clients["worker"].force_login(worker_user)
    return world


@dataclass(frozen=True)
class FuzzRequest:
    """One generated request: what it targets and what it sends."""

    endpoint: Endpoint
    encoding: str
    values: tuple[tuple[str, str], ...]
    charset: str
    raw: bytes
    path_text: str
    pick: int

    def describe(self) -> str:
        return (
            f"{self.endpoint.method} {self.endpoint.path} [{self.endpoint.visitor}] encoding={self.encoding} "
            f"charset={self.charset!r} values={list(self.values)!r} raw={self.raw[:80]!r} "
            f"path_text={self.path_text!r}"
        )


@st.composite
def requests(draw: Any, endpoints: tuple[Endpoint, ...] = ENDPOINTS) -> FuzzRequest:
    """A hostile request to one of ``endpoints``."""
    endpoint = draw(st.sampled_from(endpoints))
    names = st.sampled_from(endpoint.fields) | st.sampled_from(["csrfmiddlewaretoken", "x\x00", "\ud800"])
    values = draw(
        st.lists(
            st.tuples(names, TEXT | st.sampled_from(["approve", "reject", "yes", "1", "50"])), max_size=8
        )
    )
    return FuzzRequest(
        endpoint=endpoint,
        encoding=draw(st.sampled_from(ENCODINGS)),
        values=tuple(values),
        charset=draw(st.sampled_from(CHARSETS)),
        raw=draw(st.binary(max_size=200)),
        path_text=draw(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=30)),
        pick=draw(st.integers(0, 100)),
    )


def _path(world: World, request: FuzzRequest) -> str:
    ids = world.ids
    fill = {
        key: (value[request.pick % len(value)] if isinstance(value, list) else value)
        for key, value in ids.items()
    }
    fill["text"] = request.path_text.replace("/", "_").replace("?", "_").replace("#", "_") or "x"
    return request.endpoint.path.format(**fill)


FILE_SUFFIXES = (".zip", ".json", ".jsonl", ".pdf", ".txt", ".md", ".exe", "")


def _multipart(
    values: tuple[tuple[str, str], ...], boundary: str, file: tuple[str, bytes] | None = None
) -> bytes:
    """A multipart body of ``values``, and of one uploaded file ``(name, content)`` in field ``files``."""
    parts = []
    for name, value in values:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
        parts.append(head.encode("utf-8", "surrogatepass") + value.encode("utf-8", "surrogatepass") + b"\r\n")
    if file is not None:
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{file[0]}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode("utf-8", "surrogatepass") + file[1] + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode()


def _json_body(values: tuple[tuple[str, str], ...], raw: bytes) -> bytes:
    data: dict[str, Any] = {name: value for name, value in values}
    data.setdefault("event_type", "submission.status.change")
    data.setdefault("resource_id", "r1")
    text = json.dumps(data, allow_nan=True)
    if raw[:1] in (b"n", b"i"):
        text = text[:-1] + (', "x": NaN}' if raw[:1] == b"n" else ', "x": -Infinity}')
    return text.encode("utf-8", "surrogatepass")


def send(world: World, request: FuzzRequest) -> tuple[int, str]:
    """Send ``request``; returns the status and the path it went to."""
    client = world.clients[request.endpoint.visitor]
    token = client.cookies["csrftoken"].value if "csrftoken" in client.cookies else ""
    headers = {"X-CSRFToken": token}
    path = _path(world, request)
    pairs = [(k, v) for k, v in request.values]
    if request.endpoint.method == "GET" or request.encoding == "query":
        query = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs)
        method = client.get if request.endpoint.method == "GET" else client.post
        return method(f"{path}?{query}" if query else path, headers=headers).status_code, path
    body: bytes
    content_type: str
    if request.encoding == "form":
        body = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs).encode()
        content_type = "application/x-www-form-urlencoded"
    elif request.encoding == "charset":
        body = "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs).encode() + request.raw
        content_type = f"application/x-www-form-urlencoded; charset={request.charset}"
    elif request.encoding == "multipart":
        file = None
        if "files" in request.endpoint.fields:  # a hostile file: random bytes, a name with any characters
            name = request.path_text.replace('"', "_").replace("\r", "_").replace("\n", "_")
            file = (name + FILE_SUFFIXES[request.pick % len(FILE_SUFFIXES)], request.raw)
        body = _multipart(request.values, "fuzzboundary", file)
        content_type = "multipart/form-data; boundary=fuzzboundary"
    elif request.encoding == "bad-multipart":
        body = request.raw + _multipart(request.values, "fuzzboundary")[: request.pick]
        boundary = ["fuzzboundary", "", "x" * 200, "\x00", '"'][request.pick % 5]
        content_type = f"multipart/form-data; boundary={boundary}"
    elif request.encoding == "json":
        body = _json_body(request.values, request.raw)
        content_type = "application/json"
    else:
        body = request.raw
        content_type = ["application/octet-stream", "text/plain; charset=utf-16", "application/json"][
            request.pick % 3
        ]
    if request.endpoint.name == "webhook":
        stamp = str(int(time.time()))
        headers = {SIGNATURE_HEADER: sign(WEBHOOK_SECRET, stamp, body), TIMESTAMP_HEADER: stamp}
    try:
        response = client.generic("POST", path, body, content_type=content_type, headers=headers)
    except ValueError as exc:
        if "header" in str(exc).lower():
            return 400, path  # the test client itself cannot send this header value
        raise
    return response.status_code, path


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text.encode("utf-8", "surrogatepass"), safe="")
