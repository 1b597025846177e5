"""Kill tests: the process is killed (SIGKILL) between each platform call and the local write after it.

A real ``manage.py`` process works against the test database and the fake MTurk / Prolific server in
this process; the fake applies the call, then kills the caller before answering (the platform acted,
crowdqa never heard), and keeps its state. The re-run must converge: one HIT per unit, one decision,
one payment, the ledger matching the platform.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Assignment, Batch
from annotation.services.batches import BatchSpec
from crowd.models import BatchPlatformState, Payment
from crowd.services.launching import launch
from crowd.services.publishing import publish
from crowd.services.sync import sync_batch
from tests.crowd.conftest import answers_for
from tests.integration.conftest import database_url

REPO = Path(__file__).resolve().parents[2]
REASON = "Your question repeats its own answer, so it cannot be used in an exam: " * 3

pytestmark = pytest.mark.django_db(transaction=True)


def run_killed(fake: Any, operation: str, args: list[str], env: dict[str, str]) -> None:
    """Run ``manage.py <args>`` and SIGKILL it once ``operation`` took effect on the fake platform."""
    holder: list[subprocess.Popen] = []

    def kill() -> None:
        holder[0].kill()
        holder[0].wait(timeout=30)

    fake.after[operation] = kill
    process = subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    holder.append(process)
    output, _ = process.communicate(timeout=120)
    assert operation not in fake.after, f"{operation} was never called: {output.decode()[-2000:]}"
    assert process.returncode == -9, output.decode()[-2000:]


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, DATABASE_URL=database_url(), PUBLIC_BASE_URL="http://testserver", **extra)
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    return env


def _review(batch: Batch, *args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("review_batch", "--batch", str(batch.pk), *args, stdout=out)
    return json.loads(out.getvalue().splitlines()[-1])


@pytest.fixture
def mturk(sciq_corpus, fake_mturk_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    return fake_mturk_server


def _mturk_submitted(server: Any) -> tuple[Batch, Assignment]:
    batch, _ = launch(
        BatchSpec(
            kind="sciq_question", corpus="sci", provider="mturk", limit=1, assignments=1, reward_cents=50
        )
    )
    hit = batch.hits.get()
    server.fake.submit(hit.platform_ref, "W1", answers_for(hit))
    sync_batch(batch)
    return batch, Assignment.objects.get(hit=hit)


def test_kill_after_create_hit__publishing_again_adopts_the_hit(mturk) -> None:  # noqa: ANN001
    fake = mturk.fake
    env = _env(AWS_ENDPOINT_URL_MTURK=mturk.url)
    args = [
        "launch_batch",
        "--kind",
        "sciq_question",
        "--corpus",
        "sci",
        "--provider",
        "mturk",
        "--limit",
        "2",
    ]
    run_killed(fake, "CreateHITWithHITType", [*args, "--assignments", "1", "--reward", "0.50"], env)
    batch = Batch.objects.get()
    assert batch.status == Batch.Status.DRAFT and len(fake.hits) == 1  # died after the first HIT
    publish(batch)  # the researcher presses Publish again
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED and len(fake.hits) == 2
    assert set(batch.hits.values_list("platform_ref", flat=True)) == set(fake.hits)


def test_kill_mid_launch__rerunning_the_same_launch_resumes_it(mturk) -> None:  # noqa: ANN001
    fake = mturk.fake
    args = [
        "launch_batch",
        "--kind",
        "sciq_question",
        "--corpus",
        "sci",
        "--provider",
        "mturk",
        "--limit",
        "3",
    ]
    run_killed(fake, "CreateHITWithHITType", args, _env(AWS_ENDPOINT_URL_MTURK=mturk.url))
    assert Batch.objects.get().status == Batch.Status.DRAFT and len(fake.hits) == 1
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())  # the researcher runs the same command again
    batch = Batch.objects.get()  # no second batch
    assert json.loads(out.getvalue().splitlines()[-1])["resumed"] is True
    assert batch.status == Batch.Status.PUBLISHED and len(fake.hits) == 3
    assert set(batch.hits.values_list("platform_ref", flat=True)) == set(fake.hits)


@pytest.mark.parametrize(
    ("operation", "args", "status", "mturk_status"),
    [
        ("ApproveAssignment", ["--approve", "{a}"], "approved", "Approved"),
        ("RejectAssignment", ["--reject", "{a}", "--reason", REASON], "rejected", "Rejected"),
    ],
)
def test_kill_after_review__rerun_converges_to_one_decision(
    mturk, operation, args, status, mturk_status
) -> None:  # noqa: ANN001
    batch, assignment = _mturk_submitted(mturk)
    argv = ["review_batch", "--batch", str(batch.pk), *(a.format(a=assignment.pk) for a in args)]
    run_killed(mturk.fake, operation, argv, _env(AWS_ENDPOINT_URL_MTURK=mturk.url))
    assignment.refresh_from_db()
    assert assignment.status == "submitted"  # the platform decided, the local write never happened
    _review(batch, *(a.format(a=assignment.pk) for a in args))
    assignment.refresh_from_db()
    assert (
        assignment.status == status
        and mturk.fake.assignments[assignment.platform_ref]["AssignmentStatus"] == mturk_status
    )
    rewards = Payment.objects.filter(kind="reward")
    assert rewards.count() == (1 if status == "approved" else 0)
    assert mturk.fake.calls.count(operation) == 2  # the re-run asked once more and was told it was done


def test_kill_after_send_bonus__rerun_reports_already_paid(mturk) -> None:  # noqa: ANN001
    batch, assignment = _mturk_submitted(mturk)
    _review(batch, "--approve", str(assignment.pk))
    bonus_args = ["--bonus", str(assignment.pk), "--cents", "25", "--reason", "Clear question"]
    argv = ["review_batch", "--batch", str(batch.pk), *bonus_args]
    run_killed(mturk.fake, "SendBonus", argv, _env(AWS_ENDPOINT_URL_MTURK=mturk.url))
    assert Payment.objects.get(kind="bonus").status == Payment.Status.SENT
    assert _review(batch, *bonus_args)["bonuses"][0]["status"] == "already_paid"
    assert (
        len(mturk.fake.bonuses) == 1 and Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED
    )

    # Past MTurk's 24-hour token life an unanswered bonus is never resent blindly: the same command
    # settles it from MTurk's own record (ListBonusPayments), which shows it paid.
    Payment.objects.filter(kind="bonus").update(
        status=Payment.Status.SENT, sent_at=timezone.now() - timedelta(days=2)
    )
    assert _review(batch, *bonus_args)["bonuses"][0]["status"] == "already_paid"
    assert Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED
    assert len(mturk.fake.bonuses) == 1 and mturk.fake.calls.count("ListBonusPayments") == 1


@pytest.fixture
def prolific(sciq_corpus, fake_prolific_server, settings):  # noqa: ANN001, ANN201
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROLIFIC_API_URL = fake_prolific_server.api_url
    settings.PROLIFIC_API_TOKEN = fake_prolific_server.token
    return fake_prolific_server


def _prolific_approved(server: Any) -> tuple[Batch, Assignment]:
    from crowd.models import Worker
    from crowd.services.review import approve_assignment

    batch, _ = launch(
        BatchSpec(kind="sciq_question", corpus="sci", provider="prolific", limit=1, reward_cents=50)
    )
    sub = server.fake.start(batch.platform_ref, "P1")
    assignment = Assignment.objects.create(
        hit=batch.hits.get(), worker=Worker.objects.get_or_create_for("prolific", "P1"), platform_ref=sub
    )
    assignment.submit(answers_for(batch.hits.get()))
    server.fake.complete(sub, BatchPlatformState.of(batch.pk).completion_code)
    approve_assignment(assignment)
    return batch, assignment


def _prolific_env(server: Any) -> dict[str, str]:
    return _env(PROLIFIC_API_URL=server.api_url, PROLIFIC_API_TOKEN=server.token)


def test_kill_after_study_creation__rerunning_the_same_launch_adopts_the_study(prolific) -> None:  # noqa: ANN001
    args = [
        "launch_batch",
        "--kind",
        "sciq_question",
        "--corpus",
        "sci",
        "--provider",
        "prolific",
        "--limit",
        "2",
    ]
    run_killed(prolific.fake, "create_study", args, _prolific_env(prolific))
    assert Batch.objects.get().status == Batch.Status.DRAFT and len(prolific.fake.studies) == 1
    call_command(*args, stdout=StringIO(), stderr=StringIO())
    batch = Batch.objects.get()
    assert batch.status == Batch.Status.PUBLISHED and list(prolific.fake.studies) == [batch.platform_ref]
    assert prolific.fake.studies[batch.platform_ref]["status"] == "ACTIVE"


def test_kill_after_prolific_bonus_set_up__rerun_pays_once(prolific) -> None:  # noqa: ANN001
    batch, assignment = _prolific_approved(prolific)
    bonus_args = ["--bonus", str(assignment.pk), "--cents", "40", "--reason", "Thorough"]
    argv = ["review_batch", "--batch", str(batch.pk), *bonus_args]
    run_killed(prolific.fake, "set_up_bonus", argv, _prolific_env(prolific))
    row = Payment.objects.get(kind="bonus")  # written before the set-up: the orphan is counted
    assert row.status == Payment.Status.PENDING and row.setups_in_doubt == 1 and not row.platform_ref
    assert _review(batch, *bonus_args)["bonuses"][0]["status"] == "paid"
    assert len(prolific.fake.payments) == 1  # the orphaned set-up was never paid
    row.refresh_from_db()
    assert row.status == Payment.Status.CONFIRMED and row.setups_in_doubt == 1


def test_kill_after_prolific_pay__never_resent_settled_from_the_submission_record(prolific) -> None:  # noqa: ANN001
    batch, assignment = _prolific_approved(prolific)
    bonus_args = ["--bonus", str(assignment.pk), "--cents", "40", "--reason", "Thorough"]
    argv = ["review_batch", "--batch", str(batch.pk), *bonus_args]
    run_killed(prolific.fake, "pay_bonus", argv, _prolific_env(prolific))
    assert Payment.objects.get(kind="bonus").status == Payment.Status.SENT  # unknown after the kill
    # The re-run does not pay again: Prolific's submission record lists the bonus, so it is confirmed.
    assert _review(batch, *bonus_args)["bonuses"][0]["status"] == "already_paid"
    assert len(prolific.fake.payments) == 1
    assert Payment.objects.get(kind="bonus").status == Payment.Status.CONFIRMED
    out = StringIO()
    call_command("resolve_payments", batch=batch.pk, stdout=out)  # nothing left to settle
    assert json.loads(out.getvalue().splitlines()[-1]) == {"resolved": [], "unresolved": []}
