"""The API's workers (block, unblock, message), releases built as jobs, benchmark starts and webhooks,
through the HTTP client with tokens of each role; release and benchmark on a small real SyllabusQA."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from annotation.models import Corpus, Job
from crowd.models import Worker
from crowd.providers.fake.provider import FakeProvider
from evaluation.models import BenchmarkRun
from exports.models import Release
from tests.api.conftest import submitted_on_fake
from tests.evaluation.conftest import _benchmarks_in_tmp, small_release, trimmed_syllabusqa  # noqa: F401
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS
from webhooks import tasks
from webhooks.models import Delivery, Endpoint, Event

pytestmark = pytest.mark.django_db


def post(client: Client, url: str, body: object = None) -> object:
    return client.post(url, json.dumps(body or {}), content_type="application/json")


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    ids: list[int] = []
    monkeypatch.setattr(tasks.deliver, "delay", ids.append)
    return ids


def test_workers__block_unblock_message_on_the_platform(researcher: Client, fake: FakeProvider) -> None:
    assignment = submitted_on_fake(fake, "W7")
    worker = assignment.worker
    listed = researcher.get("/api/v1/workers/").json()["results"]
    assert [w["pseudonym"] for w in listed] == [worker.pseudonym]
    assert "W7" not in json.dumps(listed)  # the platform id is never shown
    assert post(researcher, f"/api/v1/workers/{worker.pk}/block/", {"reason": " "}).status_code == 400
    answer = post(researcher, f"/api/v1/workers/{worker.pk}/block/", {"reason": "copied answers"})
    assert answer.status_code == 200 and answer.json()["status"] == "blocked"
    worker.refresh_from_db()
    assert worker.blocked and worker.block_reason == "copied answers" and fake.blocked == {"W7"}
    assert researcher.get("/api/v1/workers/?blocked=true").json()["count"] == 1
    assert researcher.get("/api/v1/workers/?blocked=maybe").status_code == 400
    assert post(researcher, f"/api/v1/workers/{worker.pk}/unblock/").json()["status"] == "active"
    worker.refresh_from_db()
    assert not worker.blocked and fake.blocked == set()
    batch = assignment.hit.batch
    body = {"batch": batch.pk, "subject": "Thanks", "message": "A bonus is on its way."}
    assert post(researcher, f"/api/v1/workers/{worker.pk}/message/", body).status_code == 200
    assert (
        post(researcher, f"/api/v1/workers/{worker.pk}/message/", {**body, "batch": 10**9}).status_code == 400
    )
    assert post(researcher, f"/api/v1/workers/{worker.pk}/message/", {"batch": "x"}).status_code == 400
    assert fake.messages == [("W7", "Thanks", "A bonus is on its way.")]
    assert post(researcher, "/api/v1/workers/999999/block/", {"reason": "x"}).status_code == 404


def test_workers__a_viewer_changes_nothing(viewer: Client, fake: FakeProvider) -> None:
    worker = submitted_on_fake(fake, "W8").worker
    assert viewer.get("/api/v1/workers/").status_code == 200
    for action, body in (("block", {"reason": "r"}), ("unblock", {}), ("message", {"batch": 1})):
        assert post(viewer, f"/api/v1/workers/{worker.pk}/{action}/", body).status_code == 403
    assert not Worker.objects.get(pk=worker.pk).blocked and fake.blocked == set() and fake.messages == []


def test_webhooks__register_list_replay_ping(researcher: Client, viewer: Client, queued: list[int]) -> None:
    refused = post(researcher, "/api/v1/webhooks/", {"url": "http://127.0.0.1:8000/", "events": ["ping"]})
    assert refused.status_code == 400 and set(refused.json()) == {"url", "events"}
    made = post(
        researcher,
        "/api/v1/webhooks/",
        {
            "url": "https://hooks.example.org/x",
            "events": ["release.built", "release.built", "batch.completed"],
        },
    )
    assert made.status_code == 201, made.content
    endpoint = Endpoint.objects.get()
    assert made.json()["secret"] == endpoint.secret and endpoint.events == [
        "batch.completed",
        "release.built",
    ]
    assert viewer.get(f"/api/v1/webhooks/{endpoint.pk}/").json()["secret"] == ""
    assert (
        post(
            viewer, "/api/v1/webhooks/", {"url": "https://a.example.org/", "events": ["release.built"]}
        ).status_code
        == 403
    )
    assert viewer.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 403
    patched = researcher.patch(
        f"/api/v1/webhooks/{endpoint.pk}/",
        json.dumps({"url": "http://10.0.0.1/"}),
        content_type="application/json",
    )
    assert patched.status_code == 400
    assert (
        researcher.put(f"/api/v1/webhooks/{endpoint.pk}/", "{}", content_type="application/json").status_code
        == 405
    )
    old = endpoint.secret
    assert post(viewer, f"/api/v1/webhooks/{endpoint.pk}/rotate/").status_code == 403
    assert (
        post(researcher, f"/api/v1/webhooks/{endpoint.pk}/rotate/", {"overlap_seconds": -1}).status_code
        == 400
    )
    assert Endpoint.objects.get().secret == old
    rotated = post(researcher, f"/api/v1/webhooks/{endpoint.pk}/rotate/", {"overlap_seconds": 600})
    endpoint.refresh_from_db()
    assert rotated.status_code == 200 and rotated.json()["secret"] == endpoint.secret != old
    assert rotated.json()["previous_secret_expires"] and endpoint.signing_secrets() == [endpoint.secret, old]
    assert "previous_secret" not in rotated.json()  # the old secret is not sent again
    ping = post(researcher, f"/api/v1/webhooks/{endpoint.pk}/ping/")
    assert ping.status_code == 202 and ping.json()["event_type"] == "ping"
    delivery = Delivery.objects.get()
    Delivery.objects.filter(pk=delivery.pk).update(status=Delivery.Status.FAILED)
    log = researcher.get(f"/api/v1/webhooks/{endpoint.pk}/deliveries/?status=failed").json()
    assert [row["id"] for row in log["results"]] == [delivery.pk]
    assert researcher.get(f"/api/v1/webhooks/{endpoint.pk}/deliveries/?status=nope").status_code == 400
    assert post(viewer, f"/api/v1/webhook-deliveries/{delivery.pk}/replay/").status_code == 403
    replayed = post(researcher, f"/api/v1/webhook-deliveries/{delivery.pk}/replay/")
    assert replayed.status_code == 202 and replayed.json()["status"] == "pending"
    assert researcher.delete(f"/api/v1/webhooks/{endpoint.pk}/").status_code == 204
    assert not Event.objects.filter(deliveries__isnull=False).exists()


def test_release_create__bad_bodies_are_400_and_a_viewer_403(researcher: Client, viewer: Client) -> None:
    body = {"name": "r", "version": "1.0", "corpus": "nope"}
    assert post(viewer, "/api/v1/releases/", body).status_code == 403
    assert post(researcher, "/api/v1/releases/", body).status_code == 400
    assert post(researcher, "/api/v1/releases/", {"name": "r"}).status_code == 400
    assert post(researcher, "/api/v1/releases/", {**body, "ratio_train": 7}).status_code == 400
    assert post(researcher, "/api/v1/releases/", {**body, "allow": ["bogus"]}).status_code == 400
    assert not Job.objects.exists()


def test_benchmark_start__bad_bodies(researcher: Client, viewer: Client) -> None:
    body = {"release": 999999, "system": "search", "metrics": ["rougeL"]}
    assert post(viewer, "/api/v1/benchmarks/", body).status_code == 403
    assert post(researcher, "/api/v1/benchmarks/", body).status_code == 400
    assert post(researcher, "/api/v1/benchmarks/", {"release": "x"}).status_code == 400


def test_release_then_benchmark__on_real_syllabusqa_with_webhooks(
    researcher: Client,
    small_release: Path,  # noqa: F811
    eager_celery: None,
    queued: list[int],
    settings,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    """A release built through the API (as a job) and a search run started on it, each announced."""
    settings.CROWDQA_RELEASES_DIR = tmp_path / "api-releases"
    Endpoint.objects.create(url="https://hooks.example.org/", events=["release.built", "benchmark.finished"])
    body = {
        "name": "syllabusqa-api",
        "version": "1.0",
        "corpus": "syllabusqa",
        "use_original_splits": True,
        "formats": ["csv", "jsonl"],
        "privacy_allow": list(SYLLABUSQA_PUBLIC_CONTACTS),
    }
    corpus = Corpus.objects.get(name="syllabusqa")
    Job.objects.create(kind="filter_passages", params={"corpus": "syllabusqa"}, status=Job.Status.DONE)
    imported = researcher.get(f"/api/v1/corpora/{corpus.pk}/status/").json()
    assert imported["documents"] == 4 and imported["qa_pairs"] == corpus.qa_pairs.count() > 0
    assert set(imported["documents_by_split"]) == {"train", "val", "test"}
    assert sum(imported["qa_pairs_by_type"].values()) == imported["qa_pairs"]
    assert [j["kind"] for j in imported["jobs"]] == ["filter_passages", "export_release"]  # newest first
    assert researcher.get("/api/v1/corpora/999999/status/").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        answer = post(researcher, "/api/v1/releases/", body)
    assert answer.status_code == 202, answer.content
    job = researcher.get(f"/api/v1/jobs/{answer.json()['id']}/").json()
    assert job["status"] == "done", job
    release = Release.objects.get(name="syllabusqa-api")
    assert Event.objects.get(type="release.built").data["release"]["id"] == release.pk
    assert post(researcher, "/api/v1/releases/", body).status_code == 400  # the version is taken
    run_body = {"release": release.pk, "system": "search", "split": "test", "metrics": ["rougeL"], "limit": 3}
    with django_capture_on_commit_callbacks(execute=True):
        started = post(researcher, "/api/v1/benchmarks/", run_body)
    assert started.status_code == 202, started.content
    run = BenchmarkRun.objects.get(pk=started.json()["id"])
    assert run.status == BenchmarkRun.Status.DONE and run.n_items == 3 and run.metrics["rouge_l_f1"] > 0
    assert Event.objects.get(type="benchmark.finished").data["run"]["id"] == run.pk
    assert post(researcher, "/api/v1/benchmarks/", {**run_body, "metrics": ["nope"]}).status_code == 400
    assert len(queued) == 2


@pytest.mark.parametrize(
    "body",
    [
        {"kind": "sciq_distractor", "parent": 2**70, "reward": "0.10"},
        {"kind": "screening", "require_qualification": 2**64, "reward": "0.10"},
        {"kind": "no-such-kind", "time_limit": 10, "reward": "0.10"},
    ],
)
def test_batch_bodies__huge_ids_and_unknown_kinds_are_400(researcher: Client, body: dict) -> None:
    """Found by the schemathesis run: an unknown kind with a time limit reached the time-limit rule (a
    500 before); ids past 64 bits, which overflowed SQLite in a lookup, are refused by the body's
    checks."""
    for url in ("/api/v1/batches/", "/api/v1/batches/estimate/"):
        assert post(researcher, url, body).status_code == 400
