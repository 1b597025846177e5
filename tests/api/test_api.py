"""The REST API through the HTTP client with tokens of each role: who may do what, and that the actions
take effect (stored here and sent through the platform) through the console's services."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from annotation.models import Assignment, Batch
from crowd.models import Payment
from crowd.providers.fake.provider import FakeProvider
from tests.api.conftest import submitted_on_fake
from tests.factories import make_corpus, make_document, make_researcher

pytestmark = pytest.mark.django_db

NEW_BATCH = {"kind": "syllabus_qa", "provider": "local", "corpus": "syl", "reward": "0.50", "assignments": 2}


def _corpus() -> None:
    corpus = make_corpus(name="syl")
    for d in range(3):
        make_document(corpus, name=f"course-{d}", text=f"Office hours are on day {d}.", page_starts=[0])


def _post(client: Client, url: str, body: object = None) -> object:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def test_anonymous__refused_everywhere(client: Client) -> None:
    for url in ("/api/v1/corpora/", "/api/v1/batches/", "/api/v1/assignments/", "/api/v1/jobs/"):
        assert client.get(url).status_code == 401, url
    assert _post(client, "/api/v1/batches/", NEW_BATCH).status_code == 401
    assert Client(HTTP_AUTHORIZATION="Token not-a-token").get("/api/v1/batches/").status_code == 401


def test_viewer__reads_but_cannot_act(viewer: Client, fake: FakeProvider) -> None:
    """Security: an account that may only view is refused every action (403), and nothing changes."""
    _corpus()
    assignment = submitted_on_fake(fake)
    batch = assignment.hit.batch
    calls_before = list(fake.calls)
    assert viewer.get("/api/v1/batches/").json()["count"] == 1
    assert viewer.get(f"/api/v1/batches/{batch.pk}/").status_code == 200
    refused = [
        ("/api/v1/batches/", NEW_BATCH),
        ("/api/v1/batches/estimate/", NEW_BATCH),
        (f"/api/v1/batches/{batch.pk}/pause/", None),
        (f"/api/v1/batches/{batch.pk}/publish/", None),
        (f"/api/v1/assignments/{assignment.pk}/approve/", None),
        (f"/api/v1/assignments/{assignment.pk}/reject/", {"reason": "Off topic for this passage."}),
        (f"/api/v1/assignments/{assignment.pk}/bonus/", {"cents": 25, "reason": "Great"}),
    ]
    for url, body in refused:
        assert _post(viewer, url, body).status_code == 403, url
    assert Batch.objects.count() == 1 and Batch.objects.get().status == Batch.Status.PUBLISHED
    assert Assignment.objects.get().status == Assignment.Status.SUBMITTED
    assert fake.calls == calls_before and fake.paid == []


def test_account_without_view__refused(client: Client) -> None:
    from django.contrib.auth import get_user_model

    from tests.api.conftest import token_client

    nobody = token_client(get_user_model().objects.create_user("nobody", password="pw-for-tests"))
    assert nobody.get("/api/v1/batches/").status_code == 403


def test_researcher__creates_estimates_publishes_pauses_resumes(researcher: Client) -> None:
    _corpus()
    estimate = _post(researcher, "/api/v1/batches/estimate/", NEW_BATCH)
    assert estimate.status_code == 200, estimate.content
    assert estimate.json()["hits"] == 3 and estimate.json()["assignments"] == 6
    assert estimate.json()["rewards_cents"] == 300 and Batch.objects.count() == 0
    created = _post(researcher, "/api/v1/batches/", {**NEW_BATCH, "name": "From a script"})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["status"] == "draft" and body["name"] == "From a script" and body["reward_cents"] == 50
    assert body["estimate"]["total_cents"] == estimate.json()["total_cents"]
    assert body["progress"]["places_total"] == 6
    pk = body["id"]
    assert Batch.objects.get(pk=pk).created_by.username == "rita"
    assert _post(researcher, f"/api/v1/batches/{pk}/publish/").json()["status"] == "published"
    assert _post(researcher, f"/api/v1/batches/{pk}/pause/").json()["status"] == "paused"
    assert _post(researcher, f"/api/v1/batches/{pk}/pause/").status_code == 400  # not from paused
    resumed = _post(researcher, f"/api/v1/batches/{pk}/resume/").json()
    assert resumed["status"] == "published" and resumed["progress"]["states"]["free"] == 6
    listed = researcher.get("/api/v1/batches/?status=published").json()
    assert [b["id"] for b in listed["results"]] == [pk]
    assert researcher.get("/api/v1/batches/?status=draft").json()["count"] == 0


def test_create__the_new_batch_pages_checks(researcher: Client) -> None:
    """The form's and the service's refusals come back as 400 with the field named; nothing is created."""
    _corpus()
    cases = [
        ({**NEW_BATCH, "corpus": "nope"}, "corpus"),
        ({**NEW_BATCH, "documents": ["missing-doc"]}, "documents"),
        ({**NEW_BATCH, "kind": "nonsense"}, "kind"),
        ({**NEW_BATCH, "reward": "-1"}, "reward"),
        ({**NEW_BATCH, "expected_minutes": 500, "time_limit": 10}, "expected_minutes"),
        ({**NEW_BATCH, "budget": "0.10"}, None),  # the budget cap is below the estimate
    ]
    for body, field in cases:
        response = _post(researcher, "/api/v1/batches/", body)
        assert response.status_code == 400, (body, response.content)
        if field:
            assert field in response.json(), response.json()
    assert Batch.objects.count() == 0


def test_researcher__approve_reject_bonus_reach_the_platform(researcher: Client, fake: FakeProvider) -> None:
    first = submitted_on_fake(fake, "W1")
    second = submitted_on_fake(fake, "W2")
    response = _post(researcher, f"/api/v1/assignments/{first.pk}/approve/")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved"
    assert Assignment.objects.get(pk=first.pk).status == Assignment.Status.APPROVED
    assert ("approved", first.platform_ref) in fake.calls
    assert Payment.objects.get(assignment=first, kind=Payment.Kind.REWARD).amount_cents == 10
    assert _post(researcher, f"/api/v1/assignments/{second.pk}/reject/", {"reason": ""}).status_code == 400
    rejected = _post(
        researcher,
        f"/api/v1/assignments/{second.pk}/reject/",
        {"reason": "The question is not about the passage.", "category": "LOW_EFFORT"},
    )
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    assert ("rejected", second.platform_ref) in fake.calls
    for _ in range(2):  # a retry pays nothing more: one ledger key per reason
        paid = _post(researcher, f"/api/v1/assignments/{first.pk}/bonus/", {"cents": 25, "reason": "Great"})
        assert paid.status_code == 200, paid.content
    assert [cents for _, _, cents in fake.paid].count(25) == 1
    assert Payment.objects.filter(assignment=first, kind=Payment.Kind.BONUS).count() == 1
    _post(researcher, f"/api/v1/assignments/{first.pk}/approve/")  # approving again pays nothing more
    assert Payment.objects.filter(assignment=first, kind=Payment.Kind.REWARD).count() == 1
    assert (
        _post(researcher, f"/api/v1/assignments/{second.pk}/bonus/", {"cents": 5, "reason": ""}).status_code
        == 400
    )


def test_assignments__filters(researcher: Client, fake: FakeProvider) -> None:
    first = submitted_on_fake(fake, "W1")
    submitted_on_fake(fake, "W2")
    batch = first.hit.batch_id
    rows = researcher.get(f"/api/v1/assignments/?batch={batch}").json()["results"]
    assert [r["id"] for r in rows] == [first.pk]
    assert researcher.get("/api/v1/assignments/?status=submitted").json()["count"] == 2
    assert researcher.get("/api/v1/assignments/?status=approved").json()["count"] == 0
    pseudonym = first.worker.pseudonym
    assert researcher.get(f"/api/v1/assignments/?worker={pseudonym}").json()["count"] == 1
    for junk in ("batch=x", "status=nope", "batch=99999999999999999999999", "page=abc", "page=999"):
        assert researcher.get(f"/api/v1/assignments/?{junk}").status_code in (400, 404), junk


@pytest.mark.parametrize(
    "url,body",
    [
        ("/api/v1/batches/", "not json"),
        ("/api/v1/batches/", "[1, 2]"),
        ("/api/v1/batches/", '{"kind": ["x"], "reward": {"a": 1}}'),
        ("/api/v1/batches/", '{"kind": "syllabus_qa", "reward": "1e400", "exclude_batches": ["a"]}'),
        ("/api/v1/batches/estimate/", '{"kind": "syllabus_qa", "reward": "1", "corpus": "\\u0000"}'),
        ("/api/v1/assignments/1/bonus/", '{"cents": "lots"}'),
        ("/api/v1/batches/abc/pause/", "{}"),
    ],
)
def test_malformed__never_a_server_error(researcher: Client, url: str, body: str) -> None:
    response = researcher.post(url, body, content_type="application/json")
    assert response.status_code in (400, 404), response.content


def test_session__needs_csrf() -> None:
    """Security: a signed-in browser session may read, but a change without the CSRF token is refused."""
    _corpus()
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(make_researcher("sam"))
    assert browser.get("/api/v1/batches/").status_code == 200
    assert _post(browser, "/api/v1/batches/", NEW_BATCH).status_code == 403
    assert Batch.objects.count() == 0


def test_jobs__status(researcher: Client) -> None:
    from annotation.models import Job

    job = Job.objects.create(kind="import", progress_done=3, progress_total=10)
    body = researcher.get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["status"] == "pending" and body["progress_done"] == 3
    assert researcher.get("/api/v1/jobs/?status=done").json()["count"] == 0
    assert researcher.get("/api/v1/jobs/999999/").status_code == 404


def test_api_token__prints_the_accounts_token() -> None:
    user = make_researcher("tina")
    out = StringIO()
    call_command("api_token", "tina", stdout=out)
    key = out.getvalue().strip()
    assert Token.objects.get(user=user).key == key
    again = StringIO()
    call_command("api_token", "tina", stdout=again)
    assert again.getvalue().strip() == key
    rotated = StringIO()
    call_command("api_token", "tina", "--rotate", stdout=rotated)
    assert rotated.getvalue().strip() != key
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/batches/").status_code == 401
    with pytest.raises(CommandError):
        call_command("api_token", "nobody-here")


def test_schema_and_docs__served_without_a_cdn(researcher: Client) -> None:
    schema = researcher.get("/api/v1/schema/?format=json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/v1/batches/{id}/publish/" in paths and "/api/v1/assignments/{id}/bonus/" in paths
    docs = researcher.get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in docs and "cdn" not in docs.lower() and "https://" not in docs


def test_throttle__answers_429(researcher: Client, settings: object) -> None:
    from rest_framework.throttling import UserRateThrottle

    UserRateThrottle.THROTTLE_RATES = {**UserRateThrottle.THROTTLE_RATES, "user": "3/minute"}
    try:
        codes = [researcher.get("/api/v1/corpora/").status_code for _ in range(5)]
    finally:
        UserRateThrottle.THROTTLE_RATES = {**UserRateThrottle.THROTTLE_RATES, "user": "600/minute"}
    assert codes == [200, 200, 200, 429, 429]


def test_releases_and_benchmarks__listed_with_files_and_results(researcher: Client, tmp_path: object) -> None:
    from datetime import UTC, datetime
    from pathlib import Path

    from evaluation.models import BenchmarkRun
    from exports.models import Release

    root = Path(str(tmp_path)) / "syl-1.0"
    root.mkdir()
    (root / "manifest.json").write_text(
        json.dumps({"files": [{"path": "test.jsonl", "sha256": "ab" * 32, "rows": 12}]}), encoding="utf-8"
    )
    release = Release.objects.create(
        name="syl", version="1.0", path=str(root), manifest_sha256="cd" * 32, created=datetime.now(UTC)
    )
    broken = Release.objects.create(
        name="syl",
        version="0.9",
        path=str(root.parent / "gone"),
        manifest_sha256="ef" * 32,
        created=datetime.now(UTC),
    )
    assert researcher.get("/api/v1/releases/").json()["count"] == 2
    files = researcher.get(f"/api/v1/releases/{release.pk}/files/")
    assert files.json() == [{"path": "test.jsonl", "sha256": "ab" * 32, "rows": 12}]
    assert researcher.get(f"/api/v1/releases/{broken.pk}/files/").status_code == 409
    run = BenchmarkRun.objects.create(
        release=release,
        status=BenchmarkRun.Status.DONE,
        metrics={"rougeL_f1": 0.41},
        stratified={"by_type": {"explicit": {"rougeL_f1": 0.5}}},
    )
    listed = researcher.get("/api/v1/benchmarks/?status=done").json()["results"]
    assert [r["id"] for r in listed] == [run.pk] and listed[0]["metrics"] == {"rougeL_f1": 0.41}
    detail = researcher.get(f"/api/v1/benchmarks/{run.pk}/").json()
    assert detail["stratified"]["by_type"]["explicit"]["rougeL_f1"] == 0.5
    assert researcher.get("/api/v1/benchmarks/?status=nope").status_code == 400
    assert Client().get("/api/v1/releases/").status_code == 401
