"""console/progress.py and progress.json: places by state, pseudonyms only, researchers only."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from console.progress import live_progress
from crowd.services import validation_hits
from tests.annotation.test_stage2_suggestions import _Fixed, submitted_question
from tests.factories import make_researcher, make_worker
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
