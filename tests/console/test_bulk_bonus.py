"""Bulk bonuses from a CSV on the batch page: every row checked and previewed, paid once through the
ledger and within the budget cap; and attempts to break it (other batches' work, tampered previews,
replays, bad files, other roles)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Batch
from crowd.models import Payment
from crowd.services.bulk_bonus import MAX_BYTES, digest_of, read_plan
from tests.factories import make_assignment, make_batch, make_researcher, make_worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch() -> Batch:
    batch = make_batch(reward_cents=50)
    batch.publish()
    return batch


def _work(batch: Batch, worker: str, status: str = Assignment.Status.APPROVED) -> Assignment:
    return make_assignment(batch=batch, worker=make_worker(worker), status=status, answers={"q": "a"})


@pytest.fixture
def researcher() -> Client:
    client = Client()
    client.force_login(make_researcher("rosa"))
    return client


def _url(batch: Batch) -> str:
    return reverse("annotation:batch-bonuses", args=[batch.pk])


def _post(client: Client, batch: Batch, text: str, action: str = "preview", **extra: Any) -> Any:
    return client.post(_url(batch), {"csv": text, "action": action, **extra})


def _pay(client: Client, batch: Batch, text: str) -> Any:
    return _post(client, batch, text, "pay", digest=digest_of(text))


def test_preview_then_pay_once(researcher: Client, batch: Batch) -> None:
    a, b = _work(batch, "wa"), _work(batch, "wb", Assignment.Status.SUBMITTED)
    text = (
        f"worker,amount,reason\n{a.worker.pseudonym},0.50,Careful answers\n"
        f"{b.worker.pseudonym},1.25,Extra time\n"
    )
    page = researcher.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert _url(batch) in page

    preview = _post(researcher, batch, text)
    html = preview.content.decode()
    assert preview.status_code == 200 and 'id="bonus-preview"' in html
    assert "2 bonuses, 1.75 USD" in html and "Careful answers" in html
    assert not Payment.objects.exists()  # a preview pays nothing

    paid = _pay(researcher, batch, text)
    assert paid.status_code == 200 and 'id="bonus-results"' in paid.content.decode()
    rows = {p.assignment_id: p.amount_cents for p in Payment.objects.filter(kind=Payment.Kind.BONUS)}
    assert rows == {a.pk: 50, b.pk: 125}

    # The same file again (a double click, a replay, an upload twice): nothing more is paid.
    again = _pay(researcher, batch, text)
    assert "already paid" in again.content.decode()
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 2


def test_upload_by_assignment_with_bom_and_a_bad_row_keeps_the_upload(
    researcher: Client, batch: Batch
) -> None:
    a = _work(batch, "wa")
    other = _work(make_batch(batch.corpus, name="other"), "wz")
    text = f"assignment,amount,reason\n{a.pk},0.30,Good\n{other.pk},0.30,Not this batch\n{a.pk},abc,Typo\n"
    upload = SimpleUploadedFile("bonuses.csv", ("\ufeff" + text).encode("utf-8"), content_type="text/csv")
    page = researcher.post(_url(batch), {"file": upload, "action": "preview"})
    html = page.content.decode()
    assert page.status_code == 400 and "Nothing was paid." in html
    assert f"Line 3: assignment {other.pk} is not a submitted or approved submission of this batch" in html
    assert "Line 4: the amount &#x27;abc&#x27; is not a number such as 0.50" in html
    assert f"{other.pk},0.30,Not this batch" in html  # the upload is kept in the box to correct
    assert not Payment.objects.exists()


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("{p},-1,Negative", "more than 0"),
        ("{p},0,Zero", "more than 0"),
        ("{p},NaN,Not a number", "more than 0"),
        ("{p},1e999999,Huge", "a row may pay"),
        ("{p},100.01,Too much", "a row may pay"),
        ("{p},0.505,Fraction of a cent", "more than two decimals"),
        ("{p},0.50,", "no reason"),
        ("nobody,0.50,Unknown worker", "has no submitted or approved work in this batch"),
        (",0.50,No worker", "no worker"),
        ("{p},0.50,{long}", "at most 1,024"),
    ],
)
def test_each_bad_row_is_named(batch: Batch, row: str, problem: str) -> None:
    a = _work(batch, "wa")
    plan = read_plan(batch, "worker,amount,reason\n" + row.format(p=a.worker.pseudonym, long="x" * 1100))
    assert plan.rows == [] and len(plan.problems) == 1
    assert plan.problems[0].startswith("Line 2:") and problem in plan.problems[0]


def test_files_that_cannot_be_read(researcher: Client, batch: Batch) -> None:
    _work(batch, "wa")
    cases = {
        "amount,reason\n1,x\n": "must name the columns",
        "worker,assignment,amount,reason\n": "must name the columns",
        "worker,amount,reason,iban\n": "Unknown column(s) iban",
        "worker,amount,reason\n": "no bonus rows",
        "": "must name the columns",
    }
    for text, message in cases.items():
        page = _post(researcher, batch, text)
        assert page.status_code == 400 and message in page.content.decode(), text
    for data, message in (
        (b"worker,amount,reason\n\xff\xfe,1,x\n", "not UTF-8"),
        (b"x" * (MAX_BYTES + 1), "at most"),
        (b"worker,amount,reason\n\x00,1,x\n", "NUL"),
    ):
        upload = SimpleUploadedFile("b.csv", data, content_type="text/csv")
        page = researcher.post(_url(batch), {"file": upload, "action": "preview"})
        assert page.status_code == 400 and message in page.content.decode()
    rows = "worker,amount,reason\n" + "nobody,1,x\n" * 2001
    assert "More than 2,000 rows" in _post(researcher, batch, rows).content.decode()
    # A duplicate row would be paid once; it is named instead.
    a = Assignment.objects.get()
    twice = f"worker,amount,reason\n{a.worker.pseudonym},0.5,Same\n{a.worker.pseudonym},0.7,Same\n"
    assert "the same submission and reason as line 2" in _post(researcher, batch, twice).content.decode()
    assert not Payment.objects.exists()


def test_paying_needs_the_preview_of_this_text(researcher: Client, batch: Batch) -> None:
    a = _work(batch, "wa")
    previewed = f"worker,amount,reason\n{a.worker.pseudonym},0.50,Good\n"
    changed = f"worker,amount,reason\n{a.worker.pseudonym},99.00,Good\n"
    for digest in ("", "0" * 64, digest_of(previewed)):
        page = _post(researcher, batch, changed, "pay", digest=digest)
        assert page.status_code == 400 and "changed since its preview" in page.content.decode()
    assert not Payment.objects.exists()


def test_the_budget_cap_stops_the_rows_past_it(researcher: Client, batch: Batch) -> None:
    a, b = _work(batch, "wa"), _work(batch, "wb")
    Batch.objects.filter(pk=batch.pk).update(budget_cap_cents=80)
    text = f"worker,amount,reason\n{a.worker.pseudonym},0.50,One\n{b.worker.pseudonym},0.50,Two\n"
    assert "only 0.80 USD of the batch" in _post(researcher, batch, text).content.decode()
    html = _pay(researcher, batch, text).content.decode()
    assert "exceed" in html and "1 refused" in html
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 1


def test_who_may_not(batch: Batch) -> None:
    a = _work(batch, "wa")
    text = f"worker,amount,reason\n{a.worker.pseudonym},0.50,Good\n"
    worker_session = Client()
    worker_session.force_login(get_user_model().objects.create_user("worker-account", password="x" * 20))
    viewer = get_user_model().objects.create_user("viewer", password="x" * 20)
    from django.contrib.auth.models import Permission

    viewer.user_permissions.add(
        Permission.objects.get(codename="view_batch", content_type__app_label="annotation")
    )
    viewer_client = Client()
    viewer_client.force_login(viewer)
    for client in (Client(), worker_session, viewer_client):
        assert client.get(_url(batch)).status_code in (302, 403)
        assert _pay(client, batch, text).status_code in (302, 403)
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(make_researcher("csrf"))
    assert _pay(csrf, batch, text).status_code == 403
    assert not Payment.objects.exists()
    assert Client().get(reverse("annotation:batch-bonuses", args=[9999])).status_code in (302, 403)
