"""A launch converges whatever the platform does: faults, a call that still fails after retries, lost replies.

Against the fake MTurk and Prolific servers with seeded fault injection (``tests.fakes.faults``): a publish
that stops part way is resumed by re-running the same launch, by the batch page's Publish, or by
``sync_batches``, and every way ends with exactly one HIT per unit (one study on Prolific) and no second
batch for the same request.
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Batch
from annotation.services.batches import BatchSpec
from crowd import tasks
from crowd.models import BatchPlatformState
from crowd.providers.prolific import api as prolific_api
from crowd.services.launching import launch
from crowd.services.lifecycle import LifecycleError
from crowd.services.publishing import publish
from tests.factories import make_textbook
from tests.fakes.faults import Faults

pytestmark = pytest.mark.django_db

HITS = 6
LAUNCH = ["--kind", "sciq_question", "--corpus", "big", "--limit", str(HITS), "--reward", "0.50"]


@pytest.fixture
def big_corpus(db: None) -> None:
    """Enough accepted passages for six SciQ stage-1 HITs (three passages each)."""
    make_textbook(
        "big", (f"Topic {i} is studied by scientists in many countries every year." for i in range(18))
    )


@pytest.fixture
def mturk(big_corpus, fake_mturk_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.MTURK_MAX_ATTEMPTS = 2  # a fault repeated twice outlasts the retries
    return fake_mturk_server


@pytest.fixture
def prolific(big_corpus, fake_prolific_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    settings.PROLIFIC_RETRIES = 2
    return fake_prolific_server


def _spec(provider: str) -> BatchSpec:
    return BatchSpec(kind="sciq_question", corpus="big", provider=provider, limit=HITS, reward_cents=50)


def _launch_command(provider: str) -> dict[str, Any]:
    out = StringIO()
    call_command("launch_batch", *LAUNCH, "--provider", provider, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue().splitlines()[-1])


def _converged(fake: Any) -> Batch:
    """Exactly one batch, published, one live HIT per local HIT, no duplicate and no orphan."""
    batch = Batch.objects.get()
    assert batch.status == Batch.Status.PUBLISHED
    refs = list(batch.hits.values_list("platform_ref", flat=True))
    assert len(refs) == HITS and len(set(refs)) == HITS and set(refs) == set(fake.hits)
    state = BatchPlatformState.of(batch.pk)
    assert state.publish_started is None and state.publish_ref == ""
    return batch


def _fail_at_fourth_hit(fake: Any) -> None:
    """CreateHIT throttled on every attempt (both of them) for the 4th HIT: the publish stops there."""
    fake.faults.script("CreateHITWithHITType", ["throttle", "throttle"], after=3)


def test_mturk_failed_launch__message_says_what_happened_and_how_to_resume(mturk) -> None:  # noqa: ANN001
    _fail_at_fourth_hit(mturk.fake)
    with pytest.raises(CommandError) as caught:
        _launch_command("mturk")
    message = str(caught.value)
    assert "3 of 6 HIT(s) are on MTurk" in message
    assert "run the same launch_batch command again" in message and "sync_batches --batch" in message
    assert "retried 1 platform call(s)" in message
    assert len(mturk.fake.hits) == 3 and Batch.objects.get().status == Batch.Status.DRAFT


def test_mturk_rerunning_the_same_launch__resumes_the_batch_not_a_second_one(mturk) -> None:  # noqa: ANN001
    _fail_at_fourth_hit(mturk.fake)
    with pytest.raises(CommandError):
        _launch_command("mturk")
    summary = _launch_command("mturk")
    batch = _converged(mturk.fake)
    assert summary["batch"] == batch.pk and summary["resumed"] is True


def test_mturk_resume_after_tokens_expired__adopts_by_annotation(mturk) -> None:  # noqa: ANN001
    _fail_at_fourth_hit(mturk.fake)
    with pytest.raises(LifecycleError):
        launch(_spec("mturk"))
    mturk.fake.tokens.clear()  # more than 24 hours later MTurk no longer knows the request tokens
    publish(Batch.objects.get())  # the batch page's Publish
    _converged(mturk.fake)


def test_mturk_sync_batches__finishes_a_half_published_batch(mturk) -> None:  # noqa: ANN001
    _fail_at_fourth_hit(mturk.fake)
    with pytest.raises(LifecycleError):
        launch(_spec("mturk"))
    result = tasks.sync_batches()
    batch = _converged(mturk.fake)
    assert result["batches"][0]["batch"] == batch.pk and result["batches"][0]["publish_resumed"] == HITS


def test_mturk_launch_under_faults__converges_in_one_run(mturk, settings) -> None:  # noqa: ANN001
    settings.MTURK_MAX_ATTEMPTS = 10
    mturk.fake.faults = Faults(seed=5).set("*", throttle=0.10, server_error=0.05, lost_reply=0.05, reset=0.02)
    launch(_spec("mturk"))
    _converged(mturk.fake)
    assert mturk.fake.faults.total() > 0


def test_prolific_throttled_creation__retried_after_retry_after(prolific, monkeypatch) -> None:  # noqa: ANN001
    slept: list[float] = []
    monkeypatch.setattr(prolific_api.time, "sleep", slept.append)
    prolific.fake.faults.retry_after = "3"
    prolific.fake.faults.script("create_study", ["throttle"])
    launch(_spec("prolific"))
    assert Batch.objects.get().status == Batch.Status.PUBLISHED and len(prolific.fake.studies) == 1
    assert slept == [3.0]


@pytest.mark.parametrize("kind", ["lost_reply", "server_error", "reset"])
def test_prolific_lost_creation__the_study_is_found_not_made_twice(prolific, kind) -> None:  # noqa: ANN001
    prolific.fake.faults.script("create_study", [kind])
    launch(_spec("prolific"))
    batch = Batch.objects.get()
    assert batch.status == Batch.Status.PUBLISHED and list(prolific.fake.studies) == [batch.platform_ref]
    assert prolific.fake.studies[batch.platform_ref]["status"] == "ACTIVE"


def test_prolific_failed_publish_step__keeps_the_study_and_resumes_it(prolific) -> None:  # noqa: ANN001
    prolific.fake.faults.script("transition_study", ["server_error"] * 3)  # outlasts the 2 retries
    with pytest.raises(LifecycleError, match="0 of 6 HIT"):
        launch(_spec("prolific"))
    batch = Batch.objects.get()
    study_id = BatchPlatformState.of(batch.pk).publish_ref  # kept before the publish step
    assert list(prolific.fake.studies) == [study_id]
    assert _launch_command("prolific")["resumed"] is True
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED and batch.platform_ref == study_id
    assert list(prolific.fake.studies) == [study_id] and prolific.fake.studies[study_id]["status"] == "ACTIVE"
    assert (
        BatchPlatformState.of(batch.pk).completion_code
        == prolific.fake.studies[study_id]["completion_codes"][0]["code"]
    )


def test_prolific_publish_killed_after_creation__sync_adopts_by_internal_name(prolific) -> None:  # noqa: ANN001
    # The creation's answer never came and the process died: no id recorded, the study exists.
    prolific.fake.faults.script("create_study", ["lost_reply"])
    prolific.fake.faults.script("list_studies", ["server_error"] * 9)  # every look-up fails (3 x 3 tries)
    with pytest.raises(LifecycleError):
        launch(_spec("prolific"))
    assert BatchPlatformState.of(Batch.objects.get().pk).publish_ref == "" and len(prolific.fake.studies) == 1
    result = tasks.sync_batches()
    batch = Batch.objects.get()
    assert result["batches"][0]["publish_resumed"] == HITS
    assert batch.status == Batch.Status.PUBLISHED and list(prolific.fake.studies) == [batch.platform_ref]


def test_mturk_screening_launch__a_qualification_whose_reply_was_lost_is_adopted(mturk) -> None:  # noqa: ANN001
    from tests.factories import make_corpus, make_document

    make_document(make_corpus(name="syl"), name="bio101")
    mturk.fake.faults.script("CreateQualificationType", ["lost_reply"])  # made, answer lost, retried
    batch, _ = launch(BatchSpec(kind="screening", corpus="syl", provider="mturk", reward_cents=100))
    assert batch.status == Batch.Status.PUBLISHED and len(mturk.fake.qualification_types) == 1
    assert BatchPlatformState.of(batch.pk).screening_qualification in mturk.fake.qualification_types
