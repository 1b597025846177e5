"""A sync stopped part way goes on next run from the step it reached and ends as an uninterrupted one would.

Against the fake MTurk and Prolific servers: a listing call that keeps failing past its retries (a fault
injected into the stand-in) or a crash after a step was applied stops the sync; the next run reads only
what is left (the stored cursor, ``BatchPlatformState.sync_cursor``) and every submission is collected
exactly once. Prolific syncs read only the end of the study's list once its beginning is settled, and
fall back to a whole pass when the stored start no longer fits or the full pass is due.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Worker
from crowd.providers.mturk import provider as mturk_provider
from crowd.services import sync_pass
from crowd.services.launching import launch
from crowd.services.sync import TransientSyncError, sync_batch
from tests.factories import make_textbook
from tests.fakes.faults import Faults

pytestmark = pytest.mark.django_db

HITS = 10


@pytest.fixture
def corpus(db: None) -> None:
    make_textbook(
        "resume", (f"Subject {i} is studied by scientists in many countries." for i in range(3 * HITS))
    )


@pytest.fixture
def mturk_batch(corpus, fake_mturk_server, settings, monkeypatch):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_MAX_ATTEMPTS = 2  # a fault repeated twice outlasts the retries
    monkeypatch.setattr(mturk_provider, "HITS_PER_SYNC_STEP", 3)
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="resume", provider="mturk", limit=HITS, reward_cents=50)
    )
    fake = fake_mturk_server.fake
    for i, hit in enumerate(batch.hits.order_by("position")):
        assignment = fake.accept(hit.platform_ref, f"W{i}")
        fake.external_submit({"assignmentId": [assignment], "question": ["Which?"], "answer": ["this"]})
    fake.faults = Faults(seed=3)
    return batch


def _collected(batch: Batch) -> Counter[str]:
    return Counter(Assignment.objects.filter(hit__batch=batch).values_list("platform_ref", flat=True))


def test_mturk_sync__stopped_by_faults_resumes_from_its_cursor_and_converges(
    mturk_batch: Batch, fake_mturk_server
) -> None:  # noqa: ANN001
    fake = fake_mturk_server.fake
    fake.faults.script("ListAssignmentsForHIT", ["server_error"] * 2, after=4)  # the 5th HIT's list fails
    with pytest.raises(TransientSyncError, match="stopped after 1 step"):
        sync_batch(mturk_batch)
    hits = list(mturk_batch.hits.order_by("position").values_list("platform_ref", flat=True))
    state = BatchPlatformState.of(mturk_batch.pk)
    assert state.sync_cursor["next"] == {"after_unit": hits[2]}  # steps of 3 HITs: the first was applied
    assert sum(_collected(mturk_batch).values()) == 3

    before = fake.faults.calls["ListAssignmentsForHIT"]
    counts = sync_batch(mturk_batch)
    assert fake.faults.calls["ListAssignmentsForHIT"] - before == HITS - 3  # only what was left
    assert counts["resumed"] is True and counts["restored"] == HITS - 3 and counts["missing"] == 0
    collected = _collected(mturk_batch)
    assert set(collected) == set(fake.assignments) and set(collected.values()) == {1}
    state.refresh_from_db()
    assert state.sync_cursor is None and state.synced_at is not None

    again = sync_batch(mturk_batch)  # a fresh pass: everything is here already
    assert again["resumed"] is False and again["restored"] == 0 and again["unchanged"] == HITS


def test_mturk_sync__killed_after_applying_a_step_reads_it_again_without_duplicates(
    mturk_batch: Batch, fake_mturk_server, monkeypatch
) -> None:  # noqa: ANN001
    real = sync_pass.SyncPass.step_done
    calls = {"n": 0}

    def crash_on_second(self, page, still_changing):  # noqa: ANN001, ANN202
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("killed")  # the step was applied, its cursor never stored
        return real(self, page, still_changing)

    monkeypatch.setattr(sync_pass.SyncPass, "step_done", crash_on_second)
    with pytest.raises(SystemExit):
        sync_batch(mturk_batch)
    assert sum(_collected(mturk_batch).values()) == 6
    monkeypatch.setattr(sync_pass.SyncPass, "step_done", real)
    counts = sync_batch(mturk_batch)
    assert counts["resumed"] is True and counts["unchanged"] == 3 and counts["restored"] == HITS - 6
    collected = _collected(mturk_batch)
    assert set(collected) == set(fake_mturk_server.fake.assignments) and set(collected.values()) == {1}


@pytest.fixture
def prolific_batch(corpus, fake_prolific_server, settings):  # noqa: ANN001, ANN201
    """A study with seven completed submissions the database holds as accepted (two per fake page)."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_RETRIES = 1
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="resume", provider="prolific", limit=7, reward_cents=50)
    )
    for i, hit in enumerate(batch.hits.order_by("position")):
        _participant(batch, hit, f"P{i}", fake_prolific_server.fake)
    fake_prolific_server.fake.faults = Faults(seed=5)
    return batch


def _participant(batch: Batch, hit, pid: str, fake) -> str:  # noqa: ANN001
    sub = fake.start(batch.platform_ref, pid)
    Assignment.objects.create(
        hit=hit, worker=Worker.objects.get_or_create_for("prolific", pid), platform_ref=sub
    )
    fake.complete(sub, BatchPlatformState.of(batch.pk).completion_code)
    return sub


def _submitted(batch: Batch) -> int:
    return Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.SUBMITTED).count()


def _list_calls(fake) -> int:  # noqa: ANN001
    return sum(1 for c in fake.calls if c == "GET submissions/")


def test_prolific_sync__stopped_by_faults_resumes_from_the_page_it_reached(
    prolific_batch: Batch, fake_prolific_server
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    fake.faults.script("query_submissions", ["server_error"] * 2, after=2)  # page 3 keeps failing
    with pytest.raises(TransientSyncError):
        sync_batch(prolific_batch)
    assert _submitted(prolific_batch) == 2  # page 1 applied
    assert BatchPlatformState.of(prolific_batch.pk).sync_cursor["next"]["page"] == 2

    before = _list_calls(fake)
    counts = sync_batch(prolific_batch)
    assert _list_calls(fake) - before == 3  # pages 2, 3 and 4: page 1 is not read again
    assert counts["resumed"] is True and counts["changed"] == 5 and counts["missing"] == 0
    assert _submitted(prolific_batch) == 7


def test_prolific_sync__reads_only_the_unsettled_end_then_new_work(
    prolific_batch: Batch, fake_prolific_server
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    for sub in list(fake.submissions.values())[:4]:  # pages 1 and 2 decided on Prolific
        sub["status"] = "APPROVED"
    first = sync_batch(prolific_batch)
    assert first["incremental"] is False and first["changed"] == 7
    assert BatchPlatformState.of(prolific_batch.pk).sync_from["page"] == 3

    before = _list_calls(fake)
    second = sync_batch(prolific_batch)
    assert _list_calls(fake) - before == 2  # pages 3 and 4 only
    assert second["incremental"] is True and second["unchanged"] == 3 and second["missing"] == 0

    hit = prolific_batch.hits.order_by("position").first()
    fake.studies[prolific_batch.platform_ref]["total_available_places"] += 1
    late = _participant(prolific_batch, hit, "P-late", fake)
    third = sync_batch(prolific_batch)
    assert third["incremental"] is True and third["changed"] == 1
    assert Assignment.objects.get(platform_ref=late).status == Assignment.Status.SUBMITTED


def test_prolific_sync__a_stale_start_or_a_due_full_pass_reads_everything(
    prolific_batch: Batch, fake_prolific_server
) -> None:  # noqa: ANN001
    fake = fake_prolific_server.fake
    sync_batch(prolific_batch)
    BatchPlatformState.change(prolific_batch.pk, sync_from={"page": 3, "anchor": "not-that-one"})
    before = _list_calls(fake)
    counts = sync_batch(prolific_batch)
    assert counts["incremental"] is False and counts["unchanged"] == 7  # started again from page 1
    assert _list_calls(fake) - before == 5  # page 3 (did not fit), then pages 1-4

    BatchPlatformState.change(prolific_batch.pk, full_synced_at=timezone.now() - timedelta(hours=25))
    due = sync_batch(prolific_batch)
    assert due["incremental"] is False and due["unchanged"] == 7
    assert BatchPlatformState.of(prolific_batch.pk).full_synced_at > timezone.now() - timedelta(minutes=1)


def test_batch_page__shows_publish_sync_and_pay_jobs_with_what_is_left_and_why_one_failed(
    mturk_batch: Batch, fake_mturk_server, client
) -> None:  # noqa: ANN001
    """The live progress JSON carries each platform job: done, left, and a failed job's error."""
    from django.core.management import call_command

    from tests.factories import make_researcher

    client.force_login(make_researcher("jobs"))
    url = f"/batches/{mturk_batch.pk}/progress.json"
    jobs = {j["kind"]: j for j in client.get(url).json()["jobs"]}
    assert jobs["publish"]["status"] == "done" and jobs["publish"]["done"] == jobs["publish"]["total"] == HITS

    fake_mturk_server.fake.faults.script("ListAssignmentsForHIT", ["server_error"] * 2, after=4)
    with pytest.raises(TransientSyncError):
        sync_batch(mturk_batch)
    data = client.get(url).json()
    sync = next(j for j in data["jobs"] if j["kind"] == "sync")
    assert sync["status"] == "failed" and "stopped after 1 step" in sync["error"]
    assert sync["done"] == 3 and sync["left"] == HITS - 3 and sync["unit"] == "HITs"
    assert "Syncing with the platform failed:" in data["html"]

    sync_batch(mturk_batch)
    sync = next(j for j in client.get(url).json()["jobs"] if j["kind"] == "sync")
    assert sync["status"] == "done" and sync["done"] == HITS - 3 and sync["left"] == 0 and not sync["error"]

    Assignment.objects.filter(hit__batch=mturk_batch).update(platform_meta={})
    call_command("review_batch", "--batch", str(mturk_batch.pk), "--approve-all-passing", "--confirm-no-work")
    pay = next(j for j in client.get(url).json()["jobs"] if j["kind"] == "pay")
    assert pay["status"] == "done" and pay["done"] == pay["total"] and pay["left"] == 0


def test_batch_page__keeps_polling_a_draft_while_its_publish_runs(client) -> None:  # noqa: ANN001
    from crowd.services.batch_jobs import batch_job
    from tests.factories import make_batch, make_researcher

    batch = make_batch()
    client.force_login(make_researcher("poll"))
    url = f"/batches/{batch.pk}/progress.json"
    assert client.get(url).json()["live"] is False
    with batch_job(batch.pk, "publish", "HITs", 2) as job:
        job.report(1)
        data = client.get(url).json()
        assert data["live"] is True and data["jobs"][0]["left"] == 1
        assert "data-progress-url" in client.get(f"/batches/{batch.pk}/").content.decode()
    assert client.get(url).json()["live"] is False
