"""Platform faults against the fake MTurk and Prolific servers: repeated publishing and paying, no work.

The fake answers as MTurk does (botocore's service model): a CreateHIT repeating its UniqueRequestToken
gets ``AWS.MechanicalTurk.HitAlreadyExists`` naming the HIT it made; a refused SendBonus is a
``RequestError``. Against the fake Prolific server: a participant who told Prolific they had no code
(``NOCODE``) and left nothing here is restored as no work on file.
"""

from __future__ import annotations

import pytest

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment
from crowd.providers.base import PaymentStatus
from crowd.providers.mturk import errors
from crowd.services.budget import spent_cents
from crowd.services.launching import launch
from crowd.services.publishing import publish
from crowd.services.review import ReviewError, approve_assignment, bonus
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for

pytestmark = pytest.mark.django_db


def _spec(**overrides: object) -> BatchSpec:
    values: dict[str, object] = dict(
        kind="sciq_question", corpus="sci", provider="mturk", limit=2, assignments=1, reward_cents=50
    )
    values.update(overrides)
    return BatchSpec(**values)  # type: ignore[arg-type]


@pytest.fixture
def mturk_settings(settings, fake_mturk_server):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_SANDBOX = True
    return fake_mturk_server


def test_publish__hits_made_by_a_crashed_launch_are_adopted_not_duplicated(
    sciq_corpus, mturk_settings
) -> None:  # noqa: ANN001
    fake = mturk_settings.fake
    batch, _ = launch(_spec())
    hit_ids = set(fake.hits)
    # The launch's answer was lost: the batch forgets its references, MTurk keeps its HITs.
    BatchPlatformState.objects.filter(batch=batch).update(published=None)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.DRAFT, platform_ref="")
    batch.hits.update(platform_ref="")
    publish(batch)
    batch.refresh_from_db()
    assert set(fake.hits) == hit_ids and len(fake.hits) == 2
    assert set(batch.hits.values_list("platform_ref", flat=True)) == hit_ids
    assert batch.status == Batch.Status.PUBLISHED
    assert fake.calls.count("ListHITs") == 0  # adopted from the id MTurk named, no listing needed


def test_publish__hit_already_exists_is_recognised_by_turk_error_code(mturk_settings) -> None:  # noqa: ANN001
    from crowd.providers.mturk import api as mturk_api
    from tests.fakes.fake_mturk_server import FakeMTurkError

    fake = mturk_settings.fake
    client = mturk_api.make_client(endpoint_url=mturk_settings.url, max_attempts=1)
    fake.fail_next["GetAccountBalance"] = FakeMTurkError(
        "Request refused.", turk_code="AWS.MechanicalTurk.HitAlreadyExists"
    )
    with pytest.raises(errors.MTurkAlreadyDoneError) as caught:
        mturk_api.get_account_balance(client)
    assert caught.value.code == "AWS.MechanicalTurk.HitAlreadyExists"
    assert mturk_api.is_repeated_request(caught.value)


def test_publish__a_token_naming_someone_elses_hit_is_not_adopted(mturk_settings) -> None:  # noqa: ANN001
    from crowd.providers.base import PublishRequest, PublishUnit
    from crowd.providers.mturk import api as mturk_api
    from crowd.providers.mturk.provider import MTurkProvider, token_for

    fake = mturk_settings.fake
    provider = MTurkProvider(mturk_api.make_client(endpoint_url=mturk_settings.url, max_attempts=1))

    def request(ref: str) -> PublishRequest:
        return PublishRequest(
            batch_ref=ref,
            title="t",
            description="d",
            external_url=f"https://x.example/hit/{ref}/",
            reward_cents=10,
            units=(PublishUnit("1"),),
        )

    other = provider.publish(request("78"))
    fake.tokens[token_for("hit", "77", "1")] = other.units[0].platform_id  # the token was spent elsewhere
    with pytest.raises(errors.MTurkNotFoundError, match="no HIT carries that annotation"):
        provider.publish(request("77"))
    assert len(fake.hits) == 1


def _submitted(batch: Batch, fake, worker: str = "W1") -> Assignment:  # noqa: ANN001
    hit = batch.hits.order_by("position").first()
    fake.submit(hit.platform_ref, worker, answers_for(hit))
    sync_batch(batch)
    return Assignment.objects.get(hit=hit, worker__platform_id=worker)


def test_bonus__refused_by_mturk_is_marked_refused_and_leaves_the_budget(sciq_corpus, mturk_settings) -> None:  # noqa: ANN001
    fake = mturk_settings.fake
    batch, _ = launch(_spec())
    assignment = _submitted(batch, fake)
    approve_assignment(assignment)
    before = spent_cents(batch)["bonuses"]
    fake.balance_cents = 10  # less than the bonus
    with pytest.raises(ReviewError, match="insufficient funds"):
        bonus(assignment, 200, "Great question")
    row = Payment.objects.get(kind="bonus")
    assert row.status == Payment.Status.FAILED and "insufficient funds" in row.error
    assert spent_cents(batch)["bonuses"] == before == 0
    assert fake.bonuses == []
    fake.balance_cents = 10_000  # topped up: the same key pays once
    assert bonus(assignment, 200, "Great question").status == PaymentStatus.PAID
    assert bonus(assignment, 200, "Great question").status == PaymentStatus.ALREADY_PAID
    row.refresh_from_db()
    assert row.status == Payment.Status.CONFIRMED and row.error == "" and len(fake.bonuses) == 1
    assert spent_cents(batch)["bonuses"] == 200


def test_bonus__rerun_after_sendbonus_whose_answer_was_lost_reports_already_paid(
    sciq_corpus, mturk_settings
) -> None:  # noqa: ANN001
    fake = mturk_settings.fake
    batch, _ = launch(_spec())
    assignment = _submitted(batch, fake)
    approve_assignment(assignment)
    assert bonus(assignment, 30, "Clear").status == PaymentStatus.PAID
    Payment.objects.filter(kind="bonus").update(status=Payment.Status.SENT)  # the PAID write was lost
    assert bonus(assignment, 30, "Clear").status == PaymentStatus.ALREADY_PAID
    assert len(fake.bonuses) == 1
    assert Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED


def test_spent_cents__bonus_fees_are_charged_per_bonus_as_the_budget_check_charges_them(
    sciq_corpus, mturk_settings
) -> None:  # noqa: ANN001
    from crowd.models import Worker
    from crowd.providers.costs import bonus_fee_cents
    from crowd.providers.mturk.traits import MTURK_FEES

    batch, _ = launch(_spec(reward_cents=0))
    worker = Worker.objects.get_or_create_for("mturk", "W9")
    for n, cents in enumerate((2, 2, 7)):
        Payment.objects.create(
            batch=batch,
            worker=worker,
            kind="bonus",
            amount_cents=cents,
            idempotency_key=f"b{n}",
            status=Payment.Status.CONFIRMED,
        )
    spent = spent_cents(batch)
    # MTurk charges at least one cent per bonus: 1 + 1 + 2, not round(11 * 0.2) = 2.
    assert spent["fees"] == sum(bonus_fee_cents(c, MTURK_FEES) for c in (2, 2, 7)) == 4


def test_no_work_on_file__never_approved_or_paid_automatically_and_shown_with_evidence(
    sciq_corpus, mturk_settings, client
) -> None:  # noqa: ANN001
    import json
    from io import StringIO

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    fake = mturk_settings.fake
    batch, _ = launch(_spec())
    hits = list(batch.hits.order_by("position"))
    good = _submitted(batch, fake, "W1")
    # W2 posts MTurk's externalSubmit without going through crowdqa's page: no answers anywhere.
    empty_id = fake.submit(hits[1].platform_ref, "W2", {})
    sync_batch(batch)
    empty = Assignment.objects.get(platform_ref=empty_id)
    assert empty.status == "submitted" and empty.platform_meta["no_work_on_file"] is True
    assert empty.platform_meta["evidence"]["platform_status"] == "Submitted"

    out = StringIO()
    call_command("review_batch", batch=batch.pk, approve_all_passing=True, list=True, stdout=out)
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert summary["approved"] == [good.pk]
    assert [s["assignment"] for s in summary["skipped_no_work"]] == [empty.pk]
    assert "no work on file" in out.getvalue()
    row = next(r for r in summary["submissions"] if r["assignment"] == empty.pk)
    assert row["work_on_file"] is False and row["evidence"]["platform_status"] == "Submitted"
    assert fake.assignments[empty_id]["AssignmentStatus"] == "Submitted"  # MTurk was never told

    with pytest.raises(ReviewError, match="no work on file"):
        approve_assignment(empty)
    with pytest.raises(ReviewError, match="no work on file"):
        bonus(empty, 10, "thanks")
    assert not Payment.objects.filter(assignment=empty).exists()

    staff = get_user_model().objects.create_user(
        "r", password="pw-for-tests", is_staff=True, is_superuser=True
    )
    client.force_login(staff)
    page = client.get(f"/assignments/{empty.pk}/").content.decode()
    assert "No work on file." in page and "completion code none" in page and 'name="confirm_no_work"' in page
    client.post(f"/assignments/{empty.pk}/review/", {"action": "approve"})
    assert Assignment.objects.get(pk=empty.pk).status == "submitted"
    client.post(f"/assignments/{empty.pk}/review/", {"action": "approve", "confirm_no_work": "on"})
    assert Assignment.objects.get(pk=empty.pk).status == "approved"  # a person checked and confirmed
    assert fake.assignments[empty_id]["AssignmentStatus"] == "Approved"


def test_no_work_on_file__prolific_participant_without_code_or_answers_is_restored_and_skipped(
    sciq_corpus, fake_prolific_server, settings
) -> None:  # noqa: ANN001
    import json
    from io import StringIO

    from django.core.management import call_command

    from crowd.models import Worker

    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    fake = fake_prolific_server.fake
    batch, _ = launch(_spec(provider="prolific"))
    hits = list(batch.hits.order_by("position"))
    code = fake.studies[batch.platform_ref]["completion_codes"][0]["code"]
    local = {}
    for hit, participant in zip(hits, ("P1", "P2"), strict=True):
        sub = fake.start(batch.platform_ref, participant)
        local[participant] = Assignment.objects.create(
            hit=hit, worker=Worker.objects.get_or_create_for("prolific", participant), platform_ref=sub
        )
    local["P1"].submit(answers_for(hits[0]))
    fake.complete(local["P1"].platform_ref, code)
    # P2 left crowdqa's page without submitting and told Prolific it had no code: Prolific records the
    # submission as AWAITING REVIEW with the code NOCODE, and nothing was typed here.
    fake.complete(local["P2"].platform_ref, "NOCODE")
    sync_batch(batch)
    empty = Assignment.objects.get(pk=local["P2"].pk)
    assert empty.status == "submitted" and empty.platform_meta["no_work_on_file"] is True
    evidence = empty.platform_meta["evidence"]
    assert evidence["platform_status"] == "AWAITING REVIEW" and evidence["completion_code"] == "NOCODE"
    assert evidence["answers_on_platform"] is False

    out = StringIO()
    call_command("review_batch", batch=batch.pk, approve_all_passing=True, list=True, stdout=out)
    summary = json.loads(out.getvalue().splitlines()[-1])
    assert [s["assignment"] for s in summary["skipped_no_work"]] == [empty.pk]
    assert summary["approved"] == [local["P1"].pk]
    row = next(r for r in summary["submissions"] if r["assignment"] == empty.pk)
    assert row["work_on_file"] is False and row["evidence"]["completion_code"] == "NOCODE"
    assert fake.submissions[empty.platform_ref]["status"] == "AWAITING REVIEW"  # Prolific never told
    with pytest.raises(ReviewError, match="no work on file"):
        approve_assignment(empty)
    with pytest.raises(ReviewError, match="no work on file"):
        bonus(empty, 10, "thanks")
    assert not Payment.objects.filter(assignment=empty).exists()
