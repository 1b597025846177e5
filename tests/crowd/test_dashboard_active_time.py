"""The batch dashboard pays by the hour of active time where the HIT page measured it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.models import Assignment
from crowd.services.dashboard import batch_stats
from tests.factories import make_assignment, make_batch, make_worker

pytestmark = pytest.mark.django_db


def test_batch_stats__hourly_pay_from_active_time_with_wall_time_fallback() -> None:
    batch = make_batch(reward_cents=100)
    now = timezone.now()
    # Worker a left the tab open for an hour but worked 10 minutes; worker b's page sent no active time.
    measured = make_assignment(batch=batch, worker=make_worker("a"), status=Assignment.Status.SUBMITTED)
    unmeasured = make_assignment(batch=batch, worker=make_worker("b"), status=Assignment.Status.SUBMITTED)
    Assignment.objects.filter(pk=measured.pk).update(
        submitted_at=now, time_on_task_seconds=3600, active_seconds=600, active_pages={"p": 600_000}
    )
    Assignment.objects.filter(pk=unmeasured.pk).update(submitted_at=now, time_on_task_seconds=1200)
    stats = batch_stats(batch)
    assert stats["median_seconds"] == 2400 and stats["median_active_seconds"] == 600
    assert stats["hourly_pay_cents"] == pytest.approx(100 * 3600 / 900)  # median of 600 s and 1200 s
    rows = {w["pseudonym"]: w for w in stats["workers"]}
    a, b = rows[measured.worker.pseudonym], rows[unmeasured.worker.pseudonym]
    assert a["worked_seconds"] == 600 and a["hourly_pay_cents"] == pytest.approx(600)
    assert b["worked_seconds"] == 1200 and b["hourly_pay_cents"] == pytest.approx(300)
