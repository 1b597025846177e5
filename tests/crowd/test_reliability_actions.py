"""Bulk actions on reliability from the batch page: bonus the top N (previewed, then paid through the
ledger), and block or message the workers under a threshold, by skill (real SciQ questions validated by
simulated workers of known reliability) or by gold accuracy (a real syllabus with known-answer
questions); every summary lists who it left out and why."""

from __future__ import annotations

import html as htmllib
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.importers.mcq import read_sciq
from annotation.models import Batch, GoldStanding
from crowd.models import Payment, Worker, WorkerMessage
from crowd.services.bulk_bonus import digest_of
from crowd.services.reliability import scores
from crowd.simulation import ADVERSARIAL, CAREFUL, SPAMMER, make_crowd, sciq_items, simulate
from tests.crowd.stage2_collection import build_collection
from tests.crowd.test_syllabus_gold import _batch, _work, syllabus  # noqa: F401 - the fixture
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection(shared_data):  # noqa: ANN001, ANN201
    questions = [(r.id, r.question, r.answer) for r in read_sciq(shared_data("sciq"), ("test",))[:120]]
    items = sciq_items(questions, bad_share=0.3, seed=4)
    crowd = make_crowd({CAREFUL: 5, SPAMMER: 2, ADVERSARIAL: 1}, seed=4)
    built = build_collection(items, simulate(items, crowd, k=3, seed=4, workload={SPAMMER: 2.0}))
    built.kinds = {built.workers[w.name].pseudonym: w.kind for w in crowd}  # type: ignore[attr-defined]
    return built


def _preview_rows(page: str) -> list[str]:
    section = page[page.index('id="bonus-preview"') :]
    return re.findall(r"<tr><td>\d+</td><td><code>([\w-]+)</code>", section)


def test_bonus_top__previewed_then_paid_once_with_skips_listed(client: Client, collection: Any) -> None:
    stage2 = collection.stage2
    url = reverse("annotation:batch-bonus-top", args=[stage2.pk])
    form = {"top": "3", "measure": "skill", "min_labels": "10", "amount": "0.75", "reason": "Most reliable"}
    assert client.post(url, form).status_code in (302, 403)  # anonymous: refused
    client.force_login(make_researcher())
    ranked, _ = scores(stage2, "skill", 10)
    best = ranked[0].worker
    Worker.objects.filter(pk=best.pk).update(blocked=True)  # a blocked worker is left out, and said so

    page = client.post(url, form).content.decode()
    rows = _preview_rows(page)
    assert len(rows) == 3 and best.pseudonym not in rows
    assert {collection.kinds[p] for p in rows} == {CAREFUL}
    assert [s.worker.pseudonym for s in ranked[1:4]] == rows  # the next three, best first
    assert f"<code>{best.pseudonym}</code>: blocked" in page
    assert (
        "0.75 USD" in htmllib.unescape(page) and not Payment.objects.filter(kind=Payment.Kind.BONUS).exists()
    )

    text = htmllib.unescape(re.search(r'name="csv" value="([^"]*)"', page).group(1))
    pay = {"csv": text, "digest": digest_of(text), "action": "pay"}
    bonuses = reverse("annotation:batch-bonuses", args=[stage2.pk])
    client.post(bonuses, pay)
    paid = Payment.objects.filter(kind=Payment.Kind.BONUS)
    assert sorted(paid.values_list("assignment__worker__pseudonym", flat=True)) == sorted(rows)
    assert set(paid.values_list("amount_cents", flat=True)) == {75}
    client.post(bonuses, pay)  # paying the plan again pays nothing more
    assert Payment.objects.filter(kind=Payment.Kind.BONUS).count() == 3

    few = client.post(url, {**form, "min_labels": "100000"}).content.decode()
    assert "fewer than 100000" in few and 'id="bonus-preview"' not in few  # nobody to pay: said why
    for bad in ({"amount": "abc"}, {"amount": "NaN"}, {"top": "0"}, {"measure": "luck"}, {"top": "x"}):
        response = client.post(url, {**form, **bad})
        assert response.status_code == 400 and "No plan was made" in response.content.decode()


def test_message_below_threshold__by_skill(client: Client, collection: Any) -> None:
    stage2 = collection.stage2
    action = reverse("annotation:batch-by-skill", args=[stage2.pk])
    form = {"action": "message", "measure": "skill", "threshold": "0.6", "min_labels": "10"}
    client.force_login(make_researcher())
    response = client.post(action, {**form, "subject": "", "message": ""}, follow=True)
    assert "Nothing was changed" in response.content.decode() and not WorkerMessage.objects.exists()
    response = client.post(
        action, {**form, "subject": "Please read the passage", "message": "Check each answer."}, follow=True
    )
    assert "Messaged" in response.content.decode()
    messaged = set(WorkerMessage.objects.values_list("worker__pseudonym", flat=True))
    assert messaged == {p for p, k in collection.kinds.items() if k in (SPAMMER, ADVERSARIAL)}
    assert not Worker.objects.filter(blocked=True).exists()


def test_gold_measure__block_and_bonus_on_a_syllabus_batch(
    client: Client,
    syllabus: dict[str, Any],  # noqa: F811 - the fixture
    eager_celery: None,
) -> None:
    batch: Batch = _batch()  # known-answer questions, no thresholds: nobody is blocked by the check
    for style in ("careful", "careless", "spammer"):
        _work(client, batch, Worker.objects.get_or_create_for("local", style), style, syllabus)
    assert not Worker.objects.filter(blocked=True).exists()
    client.force_login(make_researcher())
    page = client.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert 'id="reliability-actions"' in page and '<option value="gold">' in page
    assert '<option value="skill">' not in page  # no validations to aggregate here

    response = client.post(
        reverse("annotation:batch-by-skill", args=[batch.pk]),
        {
            "action": "block",
            "measure": "gold",
            "threshold": "0.5",
            "min_labels": "5",
            "reason": "wrong answers",
        },
        follow=True,
    )
    assert "Blocked 2 worker(s)" in response.content.decode()
    blocked = set(Worker.objects.filter(blocked=True).values_list("platform_id", flat=True))
    assert blocked == {"careless", "spammer"}
    careful = Worker.objects.get(platform_id="careful")
    assert GoldStanding.objects.get(batch=batch, worker=careful).gold_accuracy >= 0.5

    page = client.post(
        reverse("annotation:batch-bonus-top", args=[batch.pk]),
        {"top": "3", "measure": "gold", "min_labels": "5", "amount": "1.00", "reason": "Careful reading"},
    ).content.decode()
    assert _preview_rows(page) == [careful.pseudonym]
    for name in ("careless", "spammer"):
        assert f"<code>{Worker.objects.get(platform_id=name).pseudonym}</code>: blocked" in page
