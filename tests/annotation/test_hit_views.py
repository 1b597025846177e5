"""The generic HIT views: platform arrival, signed links, consent, drafts, return, time limits, framing.

The three kinds of HIT have their own tests (test_syllabus_hit.py, test_sciq_hits.py); these use a SciQ
stage-1 batch because its form is the smallest.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.utils import timezone

from annotation.models import Assignment, Batch, Passage, QAPair
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import BatchPlatformState, Consent, Worker
from tests.factories import make_textbook, make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db

PASSAGES = (
    "Mitochondria release energy from glucose during cellular respiration in most cells.",
    "Chloroplasts capture light energy and store it in the chemical bonds of glucose.",
    "Ribosomes build proteins by linking amino acids in the order given by messenger RNA.",
)


@pytest.fixture
def batch() -> Batch:
    make_textbook("tb", PASSAGES)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus="tb", assignments=2))
    batch.publish()
    return batch


def _valid(assignment: Assignment) -> dict[str, str]:
    passage = assignment.hit.passages.order_by("pk").first()
    return {
        "passage": str(passage.pk),
        "question": "Which organelle releases energy from glucose during cellular respiration?",
        "answer": "mitochondria",
    }


def _on(batch: Batch, provider: str, platform_ref: str = "") -> Batch:
    batch.provider = provider
    batch.platform_ref = platform_ref
    batch.save(update_fields=["provider", "platform_ref"])
    return batch


def test_arrive__mturk_preview_is_read_only(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    _on(batch, "mturk")
    hit = batch.hits.get()
    hit.platform_ref = "HIT123"
    hit.save()
    response = client.get(
        f"/hit/{batch.pk}/", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "HIT123"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "Preview" in body and "disabled" in body
    assert PASSAGES[0] in body
    assert "X-Frame-Options" not in response  # MTurk shows HIT pages in an iframe
    assert not Assignment.objects.exists() and not Worker.objects.exists()


def test_arrive__mturk_accept_creates_worker_and_assignment(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    _on(batch, "mturk")
    hit = batch.hits.get()
    hit.platform_ref = "HIT123"
    hit.save()
    params = {
        "assignmentId": "ASG1",
        "hitId": "HIT123",
        "workerId": "AWORKER",
        "turkSubmitTo": "https://www.mturk.com",
    }
    response = client.get(f"/hit/{batch.pk}/", params)
    assignment = Assignment.objects.get()
    assert response.status_code == 302 and response["Location"] == hit_links.url_for(assignment)
    assert assignment.platform_ref == "ASG1" and assignment.worker.platform == "mturk"
    assert assignment.platform_meta["turk_submit_to"] == "https://www.mturk.com/mturk/externalSubmit"
    # Arriving again (a reload inside MTurk) resumes the same assignment.
    client.get(f"/hit/{batch.pk}/", params)
    assert Assignment.objects.count() == 1
    bad = client.get(f"/hit/{batch.pk}/", {**params, "turkSubmitTo": "javascript:alert(1)"})
    assert bad.status_code == 400 and "turkSubmitTo" in bad.content.decode()


def test_assignment_page__consent_first_then_task(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    assignment = claim_next(batch, make_worker("a"))
    url = hit_links.url_for(assignment)
    first = client.get(url)
    assert 'name="consent"' in first.content.decode()
    refused = client.post(f"{url}consent/", {})
    assert refused.status_code == 400 and not Consent.objects.exists()
    given = client.post(f"{url}consent/", {"consent": "yes"})
    assert given.status_code == 302 and given["Location"].endswith("?tutorial=1")
    task = client.get(url).content.decode()
    assert 'id="hit-form"' in task and PASSAGES[1] in task


def test_assignment_page__forged_link_is_404(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    assignment = claim_next(batch, make_worker("a"))
    token = hit_links.token_for(assignment)
    assert client.get(f"/a/{token[:-2]}xx/").status_code == 404
    assert client.post(f"/a/{token[:-2]}xx/draft/", {"question": "x"}).status_code == 404


def test_save_draft__kept_and_shown_again(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    url = hit_links.url_for(assignment)
    response = client.post(f"{url}draft/", {"question": "Half-written <b>question</b>", "junk": "dropped"})
    assert response.status_code == 200 and response.json()["saved"]
    assignment.refresh_from_db()
    assert assignment.draft == {"question": "Half-written <b>question</b>"}
    body = client.get(url).content.decode()
    assert "Half-written &lt;b&gt;question&lt;/b&gt;" in body


def test_submit__stored_once_then_link_closed(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    url = hit_links.url_for(assignment)
    response = client.post(url, _valid(assignment))
    assert response.status_code == 200 and "Thank you" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.time_on_task_seconds is not None
    assert assignment.qa_pairs.count() == 1
    again = client.post(url, _valid(assignment))  # a double submit changes nothing
    assert again.status_code == 200 and assignment.qa_pairs.count() == 1
    late = client.post(f"{url}draft/", {"question": "too late"})
    assert late.status_code == 409 and late.json()["status"] == "submitted"


def test_submit__expired_between_check_and_store_says_time_is_up(
    client, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The expiry job takes the assignment while its submission is being checked: nothing is stored,
    and the worker is told the time ran out rather than thanked."""
    from annotation.hits.sciq_question import SciQQuestionHandler

    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    checked = SciQQuestionHandler.checked

    def expiring_check(self, hit, current, fields):  # type: ignore[no-untyped-def]
        result = checked(self, hit, current, fields)
        Assignment.objects.get(pk=current.pk).expire()
        return result

    monkeypatch.setattr(SciQQuestionHandler, "checked", expiring_check)
    response = client.post(hit_links.url_for(assignment), _valid(assignment))
    assert response.status_code == 410 and "Time is up" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED and assignment.answers == {}
    assert assignment.qa_pairs.count() == 0
    assert not assignment.hit.passages.filter(used_by__isnull=False).exists()


def test_submit__not_accepted_keeps_a_newer_edit_saved_meanwhile_from_another_tab(
    client, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """An invalid submission becomes the draft, merged with what is stored when it is written: another
    tab's autosave of a newer edit, landing while the submission is checked, is not undone."""
    from annotation.hits.sciq_question import SciQQuestionHandler

    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    checked = SciQQuestionHandler.checked

    def check_while_the_other_tab_saves(self, hit, current, fields):  # type: ignore[no-untyped-def]
        Assignment.objects.get(pk=current.pk).save_draft(
            {"question": "Newer, from tab B?"}, {"question": 2000}
        )
        return checked(self, hit, current, fields)

    monkeypatch.setattr(SciQQuestionHandler, "checked", check_while_the_other_tab_saves)
    form = {**_valid(assignment), "answer": "", "draft_revisions": '{"question": 1000, "answer": 1000}'}
    response = client.post(hit_links.url_for(assignment), form)
    assert response.status_code == 200 and "Write the answer" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACCEPTED
    assert assignment.draft["question"] == "Newer, from tab B?"
    assert assignment.draft_revisions["question"] == 2000


def test_submit__prolific_redirects_to_completion(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    _on(batch, "prolific", "study1")
    published = {
        "provider": "prolific",
        "batch_ref": str(batch.pk),
        "platform_batch_id": "study1",
        "units": [],
    }
    BatchPlatformState.change(batch.pk, published={**published, "completion_code": "C0DE42"})
    params = {"PROLIFIC_PID": "pid1", "STUDY_ID": "study1", "SESSION_ID": "sess1"}
    arrival = client.get(f"/hit/{batch.pk}/", params)
    assignment = Assignment.objects.get()
    assert arrival["Location"] == hit_links.url_for(assignment) and assignment.platform_ref == "sess1"
    Consent.objects.create(worker=assignment.worker, batch=batch)
    done = client.post(arrival["Location"], _valid(assignment))
    assert done.status_code == 302
    assert done["Location"] == "https://app.prolific.com/submissions/complete?cc=C0DE42"


def test_submit__local_thanks_without_reading_the_platform_state(  # type: ignore[no-untyped-def]
    client, batch: Batch, django_assert_num_queries
) -> None:
    """Only a platform whose completion needs the batch's completion code (Prolific) reads it."""
    worker = make_worker("local-thanks")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    url, form = hit_links.url_for(assignment), _valid(assignment)
    # The link and the passages, then the assignment's UPDATE, the pair's INSERT and the passage's take:
    # each group one round trip on PostgreSQL (two statements and three on SQLite), in a transaction
    # (BEGIN and COMMIT; SAVEPOINT and RELEASE, counted here, inside the test's transaction).
    with django_assert_num_queries(4 if connection.vendor == "postgresql" else 7) as captured:
        done = client.post(url, form)
    assert done.status_code == 200 and "Thank you" in done.content.decode()
    assert not [q for q in captured.captured_queries if "crowd_batchplatformstate" in q["sql"]]


def test_submit__stores_the_pages_active_time_in_the_same_update(  # type: ignore[no-untyped-def]
    client, batch: Batch, django_assert_num_queries
) -> None:
    """The form as the HIT page posts it (its fields, the active-time report, the draft revisions):
    the active time is merged as the page's reports are, in the submission's one UPDATE, and counts
    only once the submission is stored."""
    worker = make_worker("active-submit")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    Assignment.objects.filter(pk=assignment.pk).update(
        accepted_at=timezone.now() - timedelta(seconds=60), active_pages={"earlier": 12000}
    )
    url = hit_links.url_for(assignment)
    form = {
        **_valid(assignment),
        "reject_reason": "",
        "active_page": "load2",
        "active_ms": "30000",
        "draft_revisions": '{"question": 1700000000000, "answer": 1700000000001}',
    }
    with django_assert_num_queries(4 if connection.vendor == "postgresql" else 7):
        done = client.post(url, form)
    assert done.status_code == 200 and "Thank you" in done.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.active_pages == {"earlier": 12000, "load2": 30000}
    assert assignment.active_seconds == 42
    assert assignment.answers["question"] == form["question"]
    pair = QAPair.objects.get(assignment=assignment)
    assert Passage.objects.get(pk=pair.passage_id).used_by_id == pair.pk
    # A second submission of the same page (a double click) is refused and changes nothing: its pair,
    # sent with the refused UPDATE, is rolled back.
    again = client.post(url, {**form, "active_ms": "50000"})
    assert again.status_code == 200
    assignment.refresh_from_db()
    assert assignment.active_pages == {"earlier": 12000, "load2": 30000}
    assert list(QAPair.objects.filter(assignment=assignment)) == [pair]
    assert Passage.objects.get(pk=pair.passage_id).used_by_id == pair.pk


def test_hit_page__never_works_out_the_researcher_flags(client, batch: Batch, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The researcher flags (the ``can`` map of the console's templates) are never worked out for a worker's
    HIT page: the task pages' engine runs no researcher context processor."""
    from annotation import permissions

    worked_out: list[object] = []
    flags = permissions._flags
    monkeypatch.setattr(permissions, "_flags", lambda request: worked_out.append(request) or flags(request))
    worker = make_worker("no-flags")
    assignment = claim_next(batch, worker)
    Consent.objects.create(worker=worker, batch=batch)
    response = client.get(hit_links.url_for(assignment))
    assert response.status_code == 200 and worked_out == []
    assert "can" not in response.context


def test_submit__mturk_posts_to_external_submit(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    _on(batch, "mturk")
    hit = batch.hits.get()
    hit.platform_ref = "HIT9"
    hit.save()
    params = {
        "assignmentId": "ASG9",
        "hitId": "HIT9",
        "workerId": "W9",
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }
    url = client.get(f"/hit/{batch.pk}/", params)["Location"]
    assignment = Assignment.objects.get()
    Consent.objects.create(worker=assignment.worker, batch=batch)
    body = client.post(url, _valid(assignment)).content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in body
    assert 'name="assignmentId" value="ASG9"' in body
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED  # stored before MTurk is told


def test_return_and_expiry_close_the_link(client, batch: Batch) -> None:  # type: ignore[no-untyped-def]
    worker = make_worker("local-a")
    assignment = claim_next(batch, worker)
    url = hit_links.url_for(assignment)
    response = client.post(f"{url}return/")
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [f"You returned the HIT “{batch.title}”."]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.RETURNED
    assert client.get(url).status_code == 410
    other = claim_next(batch, make_worker("local-b"))
    Assignment.objects.filter(pk=other.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    expired = client.get(hit_links.url_for(other))
    assert expired.status_code == 410 and "Time is up" in expired.content.decode()
    other.refresh_from_db()
    assert other.status == Assignment.Status.EXPIRED


def test_report_active__merges_per_page_caps_at_the_clock_and_refuses_what_it_must(
    client, batch: Batch
) -> None:  # type: ignore[no-untyped-def]
    """Security behavior of the active-time report: a forged total cannot exceed the wall clock, a
    malformed one is refused, a forged link is 404, a blocked worker or a closed assignment gets nothing."""
    assignment = claim_next(batch, make_worker("a"))
    Consent.objects.create(worker=assignment.worker, batch=batch)
    Assignment.objects.filter(pk=assignment.pk).update(accepted_at=timezone.now() - timedelta(seconds=60))
    url = hit_links.url_for(assignment)
    token = hit_links.token_for(assignment)
    assert (
        client.post(f"{url}active/", {"active_page": "p1", "active_ms": "20000"}).json()["active_seconds"]
        == 20
    )
    # A late, smaller total from the same page load never lowers it; a second page load adds its own.
    client.post(f"{url}active/", {"active_page": "p1", "active_ms": "5000"})
    client.post(f"{url}active/", {"active_page": "p2", "active_ms": "10000"})
    assignment.refresh_from_db()
    assert assignment.active_pages == {"p1": 20000, "p2": 10000} and assignment.active_seconds == 30
    # A forged total is capped at the time since the assignment was accepted.
    client.post(f"{url}active/", {"active_page": "p3", "active_ms": str(10**12)})
    assignment.refresh_from_db()
    assert 60 <= assignment.active_seconds <= 62
    for bad in ({"active_page": "p1", "active_ms": "-5"}, {"active_page": "p<1>", "active_ms": "5"}, {}):
        assert client.post(f"{url}active/", bad).status_code == 400
    assert (
        client.post(f"/a/{token[:-2]}xx/active/", {"active_page": "p", "active_ms": "1"}).status_code == 404
    )
    # Autosaves carry the total too.
    client.post(f"{url}draft/", {"question": "Half", "active_page": "p4", "active_ms": "1000"})
    assignment.refresh_from_db()
    assert assignment.active_pages["p4"] == 1000
    assignment.worker.blocked = True
    assignment.worker.save(update_fields=["blocked"])
    assert client.post(f"{url}active/", {"active_page": "p5", "active_ms": "1"}).status_code in (403, 404)
    assignment.worker.blocked = False
    assignment.worker.save(update_fields=["blocked"])
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SUBMITTED)
    assert client.post(f"{url}active/", {"active_page": "p5", "active_ms": "1"}).status_code == 409


def test_merge_report__pure_rules() -> None:
    from annotation.active_time import MAX_PAGES, merge_report, parse_report

    pages, total = merge_report({}, "a", 4000, wall_seconds=10)
    pages, total = merge_report(pages, "b", 9000, wall_seconds=10)
    assert pages == {"a": 4000, "b": 9000} and total == 10  # two tabs at once never exceed the clock
    many = {f"p{i}": 1 for i in range(MAX_PAGES)}
    assert "new" not in merge_report(many, "new", 5, wall_seconds=1000)[0]
    assert parse_report("x" * 41, "1") is None and parse_report("ok", "1.5") is None
    assert parse_report("ok-1_A", "15") == ("ok-1_A", 15)
