"""One currency per batch, the platform account's: a Prolific workspace paying in GBP shows GBP everywhere.

The fake Prolific server gives a workspace's ``currency_code`` on ``GET /workspaces/{id}/balance/`` as
Prolific's API does (docs.prolific.com, "Get the balance of a workspace"); MTurk and the local crowd pay
in USD.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from console.review_views import outcome
from crowd.models import Payment, Worker
from crowd.providers.costs import format_money
from crowd.services.launching import dry_run, launch
from crowd.services.lifecycle import LifecycleError
from crowd.services.review import approve_assignment, bonus
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def gbp_workspace(fake_prolific_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_WORKSPACE_ID = fake_prolific_server.fake.add_workspace("GBP", title="QA lab")
    return fake_prolific_server.fake


def test_format_money__amount_and_code() -> None:
    assert format_money(50, "GBP") == "0.50 GBP" and format_money(1234, "USD") == "12.34 USD"


def test_prolific_batch_on_a_gbp_workspace__estimate_and_ledger_in_gbp(
    sciq_corpus, gbp_workspace, client
) -> None:  # noqa: ANN001
    spec = BatchSpec(kind="sciq_question", corpus="sci", provider="prolific", limit=2, reward_cents=50)
    assert dry_run(spec)[2] == "GBP"
    batch, _ = launch(spec)
    assert batch.currency == "GBP"
    hit = batch.hits.order_by("position").first()
    sub = gbp_workspace.start(batch.platform_ref, "P1")
    assignment = Assignment.objects.create(
        hit=hit, worker=Worker.objects.get_or_create_for("prolific", "P1"), platform_ref=sub
    )
    assignment.submit(answers_for(hit))
    gbp_workspace.complete(sub, gbp_workspace.studies[batch.platform_ref]["completion_codes"][0]["code"])
    sync_batch(batch)
    approve_assignment(Assignment.objects.get(pk=assignment.pk))
    bonus(Assignment.objects.get(pk=assignment.pk), 25, "thanks")
    ledger = Payment.objects.filter(batch=batch)
    assert ledger.count() == 2 and set(ledger.values_list("currency", flat=True)) == {"GBP"}

    assert "reward 0.50 GBP: " in outcome(Assignment.objects.get(pk=assignment.pk))
    client.force_login(make_researcher())
    paid = client.post(
        reverse("annotation:assignment-bonus", args=[assignment.pk]),
        {"cents": "30", "reason": "Clear questions"},
        follow=True,
    ).content.decode()
    assert "Bonus of 0.30 GBP for submission" in paid and "hundredths of GBP" in paid
    page = client.get(f"/batches/{batch.pk}/").content.decode()
    assert "reward 0.50 GBP" in page and "USD" not in page and "¢" not in page
    assert '<td class="num">0.50 GBP</td>' in client.get("/").content.decode()  # the overview's row
    form = {
        "kind": "sciq_question",
        "provider": "prolific",
        "corpus": "sci",
        "assignments": "1",
        "reward": "0.50",
        "time_limit": "30",
        "expected_minutes": "10",
        "action": "estimate",
    }
    estimate = client.post("/batches/new/", form).content.decode()
    assert "GBP</strong>" in estimate and "GBP/h</strong>" in estimate, estimate[-3000:]


def test_mturk_batch__usd(sciq_corpus, fake_mturk_server, settings) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="mturk", limit=1, reward_cents=50)
    )
    assert Batch.objects.get(pk=batch.pk).currency == "USD"


def test_prolific_without_workspace_id__the_only_workspace_pays_several_are_refused(
    sciq_corpus, fake_prolific_server, settings
) -> None:  # noqa: ANN001
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_WORKSPACE_ID = ""
    fake = fake_prolific_server.fake
    fake.workspaces.clear()
    fake.add_workspace("GBP", title="Only lab")
    spec = BatchSpec(kind="sciq_question", corpus="sci", provider="prolific", limit=1, reward_cents=50)
    assert dry_run(spec)[2] == "GBP"

    fake.add_workspace("EUR", title="Second lab")
    refused = r"PROLIFIC_WORKSPACE_ID is not set .* 2 workspaces .*Second lab"
    with pytest.raises(LifecycleError, match=refused):
        launch(spec)
    assert not Batch.objects.filter(provider="prolific").exists() and not fake.studies
