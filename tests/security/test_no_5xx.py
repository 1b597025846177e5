"""No input of any shape gives a server error, and nothing the worker typed is lost.

Concrete attacks first (NUL bytes, over-long fields, non-ASCII digits, oversized requests, hostile
webhooks), then a property-based fuzz (hypothesis, bounded examples) of the HIT submit, autosave,
arrival and webhook endpoints. The suite runs on SQLite and on PostgreSQL (``DATABASE_URL``), where NUL
bytes in text used to fail.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from annotation.hits.base import MAX_FIELD_CHARS
from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec, create_batch
from annotation.textnorm import storable
from crowd.models import Consent
from crowd.providers.prolific.webhooks import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign
from exports.models import Release
from tests.factories import make_researcher, make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)
FUZZ = hsettings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Any text a browser can send (hypothesis leaves out lone surrogates, which no form can encode).
TEXT = st.text(max_size=200) | st.sampled_from(["\x00", "²", "٣", "1e999", "nan", "-1", "9" * 30, "İ" * 50])


@pytest.fixture
def page() -> tuple[Assignment, str]:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", assignments=2))
    batch.publish()
    assignment = claim_next(batch, make_worker("w1"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    return assignment, hit_links.url_for(assignment)


def test_nul_bytes__autosave_and_submit_store_without_them(
    client: Client, page: tuple[Assignment, str]
) -> None:
    assignment, url = page
    saved = client.post(f"{url}draft/", {"question": "What\x00 releases energy?", "answer": "mito\x00"})
    assert saved.status_code == 200
    assignment.refresh_from_db()
    assert assignment.draft["question"] == "What releases energy?"
    passage = assignment.hit.passages.order_by("pk").first()
    done = client.post(
        url,
        {
            "passage": str(passage.pk),
            "question": "Which organelle\x00 releases energy from glucose during cellular respiration?",
            "answer": "mitochondria\x00",
        },
    )
    assert done.status_code in (200, 302)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert "\x00" not in json.dumps(assignment.answers)
    assert assignment.qa_pairs.get().answer == "mitochondria"


def test_over_long_field__message_next_to_it_and_text_kept(
    client: Client, page: tuple[Assignment, str]
) -> None:
    assignment, url = page
    long_question = "Why " + "very " * (MAX_FIELD_CHARS // 5) + "long?"
    response = client.post(url, {"passage": "²", "question": long_question, "answer": "kept answer"})
    html = response.content.decode()
    assert response.status_code == 200
    assert f"at most {MAX_FIELD_CHARS:,}" in html
    assert "kept answer" in html and long_question[:200] in html
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACCEPTED
    assert assignment.draft["question"] == long_question


def test_non_ascii_digit_passage__an_error_not_a_crash(client: Client, page: tuple[Assignment, str]) -> None:
    _, url = page
    for value in ("²", "٣", "1" * 40):
        response = client.post(url, {"passage": value, "question": "What is it?", "answer": "x"})
        assert response.status_code == 200 and "not one of this HIT" in response.content.decode()


def test_oversized_request__refused_with_400(client: Client, page: tuple[Assignment, str]) -> None:
    _, url = page
    response = client.post(f"{url}draft/", {"question": "x" * (600 * 1024)})
    assert response.status_code == 400


def test_release_diff__non_ascii_digits(client: Client) -> None:
    client.force_login(make_researcher("staff"))
    release = Release.objects.create(
        name="r",
        version="1",
        path="/nonexistent/r-1",
        manifest_sha256="0" * 64,
        created=datetime(2026, 1, 1, tzinfo=UTC),
    )
    for value in ("²", "99999999999999999999999999", "-1"):
        assert client.get(f"/releases/{release.pk}/", {"against": value}).status_code in (200, 404)


def _webhook(client: Client, body: bytes, timestamp: str, signature: str) -> Any:
    return client.generic(
        "POST",
        "/crowd/webhooks/prolific/",
        body,
        content_type="application/json",
        headers={SIGNATURE_HEADER: signature, TIMESTAMP_HEADER: timestamp},
    )


def test_prolific_webhook__nested_json_and_odd_timestamps(client: Client, settings: Any) -> None:
    settings.PROLIFIC_WEBHOOK_SECRET = "whsec-for-tests"
    now = str(int(time.time()))
    nested = b"[" * 30_000 + b"]" * 30_000
    assert _webhook(client, nested, now, "AAAA").status_code == 403  # checked before any parsing
    signed = _webhook(client, nested, now, sign("whsec-for-tests", now, nested))
    assert signed.status_code == 400
    body = json.dumps({"event_type": "submission.status.change", "resource_id": "r1"}).encode()
    for stamp in ("nan", "inf", "-inf", "1e999", "²"):
        response = _webhook(client, body, stamp, sign("whsec-for-tests", stamp, body))
        assert response.status_code == 403 and response.json()["error"] == "bad_timestamp"
    huge = b" " * (70 * 1024)
    assert _webhook(client, huge, now, "AAAA").status_code == 400
    nul = b'{"event_type": "x", "resource_id": "r\\u0000"}'
    assert _webhook(client, nul, now, sign("whsec-for-tests", now, nul)).status_code == 400


# --- property-based fuzz --------------------------------------------------------------------------


@FUZZ
@given(fields=st.dictionaries(st.sampled_from(["passage", "question", "answer", "x", "qa-0-question"]), TEXT))
def test_fuzz__autosave_and_submit_never_5xx_and_keep_every_field(
    client: Client, page: tuple[Assignment, str], fields: dict[str, str]
) -> None:
    assignment, url = page
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.ACCEPTED, draft={})
    kept = {k: storable(v) for k, v in fields.items() if k in ("passage", "question", "answer")}
    saved = client.post(f"{url}draft/", fields)
    assert saved.status_code < 500
    submitted = client.post(url, fields)
    assert submitted.status_code < 500
    assignment.refresh_from_db()
    if assignment.status == Assignment.Status.ACCEPTED:
        for name, value in kept.items():
            assert assignment.draft.get(name) == value, name
    else:
        assert {k: assignment.answers.get(k) for k in kept} == kept
        assignment.qa_pairs.all().delete()


ARRIVAL_KEYS = ["assignmentId", "hitId", "workerId", "turkSubmitTo", "PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]


@pytest.fixture
def batches() -> dict[str, Batch]:
    make_textbook("tb", [f"{text} (Part {n}.)" for n in range(3) for text in PASSAGES])
    made = {}
    for provider in ("local", "mturk", "prolific"):
        batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", provider=provider, limit=1))
        batch.platform_ref = "STUDY"
        batch.save()
        batch.hits.update(platform_ref="HIT")
        batch.publish()
        made[provider] = batch
    return made


@FUZZ
@given(
    params=st.dictionaries(
        st.sampled_from(ARRIVAL_KEYS), TEXT | st.sampled_from(["https://www.mturk.com", "HIT"])
    ),
    provider=st.sampled_from(["local", "mturk", "prolific"]),
)
def test_fuzz__arrivals_never_5xx(
    client: Client, batches: dict[str, Batch], params: dict[str, str], provider: str
) -> None:
    assert client.get(f"/hit/{batches[provider].pk}/", params).status_code < 500


@FUZZ
@given(body=st.binary(max_size=300) | TEXT.map(str.encode), stamp=TEXT, signed=st.booleans())
def test_fuzz__prolific_webhook_never_5xx(
    client: Client, settings: Any, body: bytes, stamp: str, signed: bool
) -> None:
    settings.PROLIFIC_WEBHOOK_SECRET = "whsec-for-tests"
    stamp = stamp.replace("\x00", "") or "0"
    signature = sign("whsec-for-tests", stamp, body) if signed else "bad"
    try:
        response = _webhook(client, body, stamp, signature)
    except ValueError:
        return  # the test client itself cannot send this header value
    assert response.status_code < 500
