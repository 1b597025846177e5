"""SciQ stage 2 never opens before its suggestions: a validator who opens the HIT the moment it exists
sees the six suggestions (the real WordNet fallback chain, loaded cold, as on a fresh worker).

The HIT row is watched with a ``post_save`` receiver: as soon as the transaction that created it commits,
a validator claims it and opens it in Chromium (phone and laptop). When the HIT was committed before the
suggester had stored its rows, this page said "No suggestions for this question".
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.db.models.signals import post_save
from playwright.sync_api import Page, expect

from annotation.models import HIT, Assignment
from crowd.models import Consent
from crowd.services import local_review as review
from crowd.services import validation_hits
from tests.annotation.test_stage2_suggestions import submitted_question
from tests.browser.conftest import SCREENS, overflow, serious_violations
from tests.factories import make_worker
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("screen", ["phone", "laptop"])
def test_stage2_hit__opened_the_moment_it_is_linked__shows_six_suggestions(
    live_server: Any, page: Page, eager_celery: None, screen: str
) -> None:
    validation_hits._suggester.cache_clear()  # a cold suggester, as on a freshly started worker
    pair = submitted_question()
    page.set_viewport_size(SCREENS[screen])
    seen: list[dict[str, Any]] = []

    def open_as_validator(hit: HIT) -> None:
        assignment = claim_next(hit.batch, make_worker("validator"))
        Consent.objects.get_or_create(worker=assignment.worker, batch=hit.batch)
        page.goto(live_server.url + hit_links.url_for(assignment))
        expect(page.locator("#hit-form")).to_be_visible()
        seen.append(
            {
                "suggestions": page.locator("input[name=suggested]").count(),
                "none_note": page.get_by_text("No suggestions for this question").count(),
                "overflow": overflow(page),
                "axe": serious_violations(page),
            }
        )

    def on_hit_saved(sender: Any, instance: HIT, created: bool, **kwargs: Any) -> None:
        if created and instance.qa_pair_id == pair.pk:
            transaction.on_commit(lambda: open_as_validator(instance))

    post_save.connect(on_hit_saved, sender=HIT, weak=False)
    try:
        review.approve(pair.assignment)  # commits; its on-commit job (eager) builds the stage-2 HIT
    finally:
        post_save.disconnect(on_hit_saved, sender=HIT)
    assert len(seen) == 1, "the stage-2 HIT was not opened when it was linked"
    assert seen[0] == {"suggestions": 6, "none_note": 0, "overflow": [], "axe": []}
    assert Assignment.objects.filter(hit__qa_pair=pair).count() == 1
