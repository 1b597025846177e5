"""console/progress.py and progress.json: places by state, pseudonyms only, researchers only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch
from console.progress import live_progress
from crowd.services import validation_hits
from tests.annotation.test_stage2_suggestions import _Fixed, submitted_question
from tests.factories import make_researcher, make_textbook, make_worker
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


def test_live_progress__places_working_now_and_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = submitted_question()
    stage1 = pair.assignment.hit.batch
    progress = live_progress(stage1)
    places = {s["state"]: s["n"] for s in progress["places"]["states"]}
    assert places["awaiting_review"] == 1 and places["active"] == 0 and places["free"] == 0
    assert progress["places"]["total"] == 1 and progress["hits"]["rows"][0]["submitted"] == 1
    assert progress["cost"]["unpaid_batch"] is True
    assert "short_of_suggestions" not in progress  # stage 1 has no suggestions


def test_live_progress__stage2_lists_questions_short_of_suggestions(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = submitted_question()
    monkeypatch.setattr(validation_hits, "suggester", lambda: _Fixed(["ribosomes"]))
    stage2 = validation_hits.stage2_batch_for(pair.assignment.hit.batch)
    validation_hits.add_validation_hit(stage2, pair)
    claim_next(stage2, make_worker("validator-1"))
    progress = live_progress(stage2)
    assert progress["short_of_suggestions"] == [{"pair": pair.pk, "question": pair.question[:80]}]
    assert [w["worker"] for w in progress["working_now"]] == [make_worker("validator-1").pseudonym]
    client = Client()
    client.force_login(make_researcher("r"))
    html = client.get(f"/batches/{stage2.pk}/").content.decode()
    assert "1 question offered fewer than six suggestions" in html


def test_progress_json__researchers_only_pseudonyms_only(client: Client) -> None:
    """Security: anonymous callers and worker sessions get a JSON 403; no platform id is ever sent."""
    pair = submitted_question()
    batch = pair.assignment.hit.batch
    worker = make_worker("PLATFORM-ID-123")
    url = f"/batches/{batch.pk}/progress.json"
    response = client.get(url)
    assert response.status_code == 403 and response.json()["login"] == "/accounts/login/"
    worker.user = get_user_model().objects.create_user("w-session")
    worker.save()
    client.force_login(worker.user)
    assert client.get(url).status_code == 403
    client.force_login(make_researcher("r2"))
    data: dict[str, Any] = client.get(url).json()
    assert data["batch"] == batch.pk and "html" in data
    assert "author" not in str(data)  # the author's platform id
    assert client.get("/batches/999999/progress.json").status_code == 404


def test_batch_page__hourly_pay_from_seconds_long_work_carries_a_note() -> None:
    """A pay rate from under-a-minute (scripted) submissions is labelled, not shown as a real rate."""
    from annotation.models import Assignment

    pair = submitted_question()
    Assignment.objects.filter(pk=pair.assignment_id).update(time_on_task_seconds=3)
    client = Client()
    client.force_login(make_researcher("r3"))
    html = client.get(f"/batches/{pair.assignment.hit.batch_id}/").content.decode()
    assert 'id="hourly-note"' in html and "not a real pay rate" in html
    Assignment.objects.filter(pk=pair.assignment_id).update(time_on_task_seconds=600)
    assert 'id="hourly-note"' not in client.get(f"/batches/{pair.assignment.hit.batch_id}/").content.decode()


def test_live_progress__unconfirmed_sessions_shown_apart_holding_no_place(client: Client) -> None:
    """Made-up MTurk ids are sessions MTurk has not confirmed: counted apart, never as places taken."""
    batch = _mturk_batch()
    hit = batch.hits.get()
    for n in range(3):
        params = {"assignmentId": f"MADEUP{n:024d}", "hitId": hit.platform_ref, "workerId": f"W{n}"}
        assert (
            client.get(f"/hit/{batch.pk}/", {**params, "turkSubmitTo": "https://www.mturk.com"}).status_code
            == 302
        )
    Assignment.objects.filter(platform_ref="MADEUP" + "0" * 24).update(status=Assignment.Status.SUBMITTED)
    progress = live_progress(batch)
    places = {s["state"]: s["n"] for s in progress["places"]["states"]}
    assert places["unconfirmed"] == 3 and places["active"] == 0 and places["awaiting_review"] == 0
    assert places["free"] == 1
    row = progress["hits"]["rows"][0]
    assert (row["taken"], row["unconfirmed"]) == (0, 3)
    assert {w["confirmed"] for w in progress["working_now"]} == {False}

    Assignment.objects.filter(platform_ref="MADEUP" + "0" * 24).update(vouched=True)  # MTurk confirmed it
    progress = live_progress(batch)
    places = {s["state"]: s["n"] for s in progress["places"]["states"]}
    assert (places["unconfirmed"], places["awaiting_review"], places["free"]) == (2, 1, 0)
    assert (progress["hits"]["rows"][0]["taken"], progress["hits"]["rows"][0]["unconfirmed"]) == (1, 2)
    researcher = Client()
    researcher.force_login(make_researcher("r3"))
    html = researcher.get(f"/batches/{batch.pk}/").content.decode()
    assert (
        "+2 unconfirmed" in html and "Unconfirmed by the platform" in html and ">unconfirmed</span>" in html
    )


def _mturk_batch() -> Batch:
    make_textbook(
        "tb", [f"Mitochondria release energy in cells, part {n}. Scientists study them." for n in range(3)]
    )
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="mturk", limit=1))
    batch.hits.update(platform_ref="PROGRESSHIT")
    batch.publish()
    return batch
