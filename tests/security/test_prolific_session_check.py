"""Prolific confirms a session at arrival: made-up sessions take no place, an outage gives none either.

Replays the slot-squatting attack of issue 26 on Prolific (only the study id is public: a made-up
``PROLIFIC_PID``/``SESSION_ID`` pair took a place) against the fake Prolific API, which answers
``GET /submissions/{id}/`` as Prolific does (404 for an unknown id).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch
from tests.factories import make_textbook
from tests.fakes.fake_prolific_server import FakeProlificError
from tests.fakes.fixtures import fake_prolific_server  # noqa: F401

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


@pytest.fixture
def study(fake_prolific_server, settings) -> tuple[Batch, str]:  # noqa: ANN001, F811
    """A published Prolific batch whose study is ACTIVE on the fake, with the API configured."""
    cache.clear()
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    fake = fake_prolific_server.fake
    study_id = fake._id()
    fake.studies[study_id] = {"id": study_id, "status": "ACTIVE", "places_taken": 0}
    fake.studies[study_id]["total_available_places"] = 4
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(2) for text in PASSAGES])
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider="prolific", limit=2))
    batch.platform_ref = study_id
    batch.save()
    batch.publish()
    return batch, study_id


def _arrive(batch: Batch, study_id: str, pid: str, session: str) -> Any:
    params = {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session}
    return Client().get(f"/hit/{batch.pk}/", params)


def _lookups(server) -> int:  # noqa: ANN001
    return sum(1 for call in server.fake.calls if call.startswith("GET submissions/"))


def test_made_up_session_is_refused_and_takes_no_place(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    response = _arrive(batch, study_id, "ATTACKER", "0123456789abcdef01234567")
    assert response.status_code == 403
    assert "Prolific does not confirm this session" in response.content.decode()
    assert not Assignment.objects.filter(hit__batch=batch).exists()
    # A hostile id is never sent into Prolific's URL path.
    assert _arrive(batch, study_id, "ATTACKER", "../studies").status_code == 403
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_another_participants_session_is_refused(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "VICTIM")
    assert _arrive(batch, study_id, "ATTACKER", session).status_code == 403
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_genuine_session_gets_in_and_a_reload_costs_no_second_call(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "P1")
    first = _arrive(batch, study_id, "P1", session)
    assert first.status_code == 302
    assignment = Assignment.objects.get(hit__batch=batch)
    assert assignment.platform_ref == session and assignment.worker.platform_id == "P1"
    assert _lookups(fake_prolific_server) == 1
    assert _arrive(batch, study_id, "P1", session)["Location"] == first["Location"]
    assert _lookups(fake_prolific_server) == 1
    # The cached answer also serves a session not yet bound (e.g. the first claim found no free place).
    Assignment.objects.all().delete()
    assert _arrive(batch, study_id, "P1", session).status_code == 302
    assert _lookups(fake_prolific_server) == 1


def test_an_answer_naming_the_participant_participant_is_read(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "P5")
    record = fake_prolific_server.fake.submissions[session]
    record["participant"] = record.pop("participant_id")
    assert _arrive(batch, study_id, "P5", session).status_code == 302
    assert _arrive(batch, study_id, "OTHER", session).status_code == 403


def test_a_session_no_longer_active_gets_no_new_place(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "P2")
    fake_prolific_server.fake.submissions[session]["status"] = "RETURNED"
    assert _arrive(batch, study_id, "P2", session).status_code == 403
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_prolific_503_gives_no_place_a_clear_page_and_is_not_cached(
    study: Any,
    fake_prolific_server: Any,  # noqa: F811
    caplog: Any,
) -> None:
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "P3")
    fake_prolific_server.fake.fail_next["get_submission"] = FakeProlificError(503, "Service unavailable.")
    response = _arrive(batch, study_id, "P3", session)
    assert response.status_code == 409
    assert "could not confirm your session with Prolific" in response.content.decode()
    assert not Assignment.objects.filter(hit__batch=batch).exists()
    assert "could not be confirmed" in caplog.text
    # One attempt only on this path; once Prolific answers again the same session gets in.
    assert _lookups(fake_prolific_server) == 1
    assert _arrive(batch, study_id, "P3", session).status_code == 302
    assert Assignment.objects.filter(hit__batch=batch, platform_ref=session).exists()


def test_prolific_down_gives_no_place_and_no_5xx(study, fake_prolific_server) -> None:  # noqa: ANN001, F811
    batch, study_id = study
    session = fake_prolific_server.fake.start(study_id, "P4")
    fake_prolific_server.stop()
    response = _arrive(batch, study_id, "P4", session)
    assert response.status_code == 409
    assert "try again in a minute" in response.content.decode()
    assert not Assignment.objects.filter(hit__batch=batch).exists()
