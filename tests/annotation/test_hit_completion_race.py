"""The last two submissions of a HIT, committed at the same moment, still complete it.

A HIT is completed by the ``after_submission`` job, not in the submission's transaction: a check there
cannot see the other submission's uncommitted row, so both checks can say "not yet" (the first test
shows it). The job runs after each submission commits, and the later of the two sees both.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from annotation.models import HIT, Assignment
from crowd.followup_tasks import after_submission
from tests.factories import make_assignment, make_batch, make_worker
from tests.threads import run_in_threads


def _two_slot_hit() -> tuple[HIT, list[Assignment]]:
    batch = make_batch()
    hit = HIT.objects.create(batch=batch, position=0, max_assignments=2)
    return hit, [make_assignment(batch=batch, hit=hit, worker=make_worker(f"w{i}")) for i in range(2)]


@pytest.mark.django_db(transaction=True)
def test_last_two_submissions_racing__both_checks_miss_and_the_job_completes_the_hit() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("needs row locks: SQLite runs one write transaction at a time, so the race cannot occur")
    hit, assignments = _two_slot_hit()
    both_checked = threading.Barrier(2, timeout=30)
    completed: list[bool] = []
    failures: list[BaseException] = []

    def submit(assignment: Assignment) -> None:
        try:
            with transaction.atomic():
                assignment.submit({"question": f"Q{assignment.pk}?"})
                completed.append(assignment.hit.complete_if_done())
                both_checked.wait()  # neither commits before both have checked
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    run_in_threads(submit, ((a,) for a in assignments))
    assert not failures, failures
    assert completed == [False, False]
    assert HIT.objects.get(pk=hit.pk).status == HIT.Status.OPEN  # the race, as the requests leave it
    after_submission(assignments[1].pk)
    assert HIT.objects.get(pk=hit.pk).status == HIT.Status.COMPLETED


@pytest.mark.django_db
def test_after_submission__completes_a_full_hit_and_leaves_one_with_a_free_slot() -> None:
    hit, (first, second) = _two_slot_hit()
    Assignment.objects.filter(pk=first.pk).update(status=Assignment.Status.SUBMITTED)
    after_submission(first.pk)
    assert HIT.objects.get(pk=hit.pk).status == HIT.Status.OPEN  # one slot still being worked on
    Assignment.objects.filter(pk=second.pk).update(status=Assignment.Status.SUBMITTED)
    after_submission(second.pk)
    assert HIT.objects.get(pk=hit.pk).status == HIT.Status.COMPLETED
    assert after_submission(second.pk)["assignment"] == second.pk  # a retry changes nothing
    assert HIT.objects.get(pk=hit.pk).status == HIT.Status.COMPLETED
