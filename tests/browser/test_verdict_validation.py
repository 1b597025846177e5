"""A second worker validates the model in the loop's "fooled" verdicts, in headless Chromium, on a real
SyllabusQA syllabus.

The syllabus's 14 real pairs are submitted in a batch with the model in the loop (each gets its check);
the researcher's button sends the fooled ones to a validation batch. On a laptop, a second worker arrives
through an invite, consents, sees the syllabus, the question and both answers, is stopped by the in-page
check, then chooses and submits from the keyboard alone; the page passes axe. On a phone, a third worker
disputes another verdict by touch, with nothing wider than the screen. The database then holds the
confirmed and the disputed verdict. Screenshots: verdict-validation-{laptop,phone}.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from annotation import question_types as qt
from annotation.models import Assignment, Batch, ModelCheck
from crowd.invites import create_invites
from crowd.services.validation_hits import validate_fooled_verdicts
from tests.annotation.test_syllabus_hit import claimed_hit, form_fields
from tests.browser.conftest import (
    LAPTOP,
    PHONE,
    consent_and_close_instructions,
    overflow,
    serious_violations,
    tab_to,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def validation_batch(shared_data: Any, tmp_path: Path, settings: Any, eager_celery: None) -> dict[str, Any]:
    """The real syllabus's pairs submitted with the model in the loop, their fooled verdicts sent on."""
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = hit["batch"]
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "show"}}
    batch.save()
    response = Client().post(hit["url"], form_fields(hit["cards"]))
    assert response.status_code in (200, 302)
    assert ModelCheck.objects.filter(qa_pair__assignment=hit["assignment"]).count() == len(hit["cards"])
    child, added = validate_fooled_verdicts(batch)
    assert added >= 2 and child.status == Batch.Status.PUBLISHED
    return {**hit, "child": child}


def arrive(page: Page, live_server: Any, child: Batch) -> Assignment:
    """A new worker follows an invite to the validation batch and consents; their assignment."""
    before = set(Assignment.objects.filter(hit__batch=child).values_list("pk", flat=True))
    page.goto(live_server.url + urlparse(create_invites(1, batch=child)[0].url).path)
    page.get_by_role("button", name="Start").click()
    consent_and_close_instructions(page)
    return Assignment.objects.filter(hit__batch=child).exclude(pk__in=before).get()


def shown_model_answer(check: ModelCheck) -> str:
    if check.abstained:
        return f"{qt.NO_ANSWER_TEXT} (the model found no answer in the syllabus)"
    return check.model_answer


def test_second_worker_confirms_then_another_disputes_on_a_phone(
    page: Page,
    live_server: Any,
    validation_batch: dict[str, Any],
    screenshot: Any,
    artifacts_dir: Path,
) -> None:
    child = validation_batch["child"]
    errors_js: list[str] = []
    page.on("pageerror", lambda exc: errors_js.append(str(exc)))

    # Laptop, keyboard only.
    page.set_viewport_size(LAPTOP)
    assignment = arrive(page, live_server, child)
    pair = assignment.hit.qa_pair
    check = ModelCheck.objects.get(qa_pair=pair)
    expect(page.locator("#validation-question")).to_have_text(pair.question)
    expect(page.locator("#worker-answer")).to_have_text(pair.answer)
    expect(page.locator("#model-answer")).to_have_text(shown_model_answer(check))
    expect(page.locator(".page-text").first).to_be_visible()  # the syllabus beside them
    assert serious_violations(page) == []
    tab_to(page, "#hit-form button[type=submit]")
    page.keyboard.press("Enter")
    expect(page.locator("#verdict-msg")).to_have_text("Say whether the model's answer is wrong.")
    expect(page.locator("#client-summary")).to_be_visible()
    expect(page.locator("#verdict-model_wrong")).to_be_focused()
    page.keyboard.press("Space")
    expect(page.locator("#verdict-model_wrong")).to_be_checked()
    expect(page.locator("#client-summary")).to_be_hidden()
    tab_to(page, "#note")
    page.keyboard.type("The syllabus gives the date in the schedule.")
    assert serious_violations(page) == []
    screenshot("verdict-validation-laptop", full_page=False)
    tab_to(page, "#hit-form button[type=submit]")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.answers == {
        "verdict": "model_wrong",
        "note": "The syllabus gives the date in the schedule.",
    }
    assert ModelCheck.objects.get(pk=check.pk).validation == "confirmed"

    # Phone, by touch: another worker, another pair.
    phone_context = page.context.browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    phone = phone_context.new_page()
    phone.on("pageerror", lambda exc: errors_js.append(str(exc)))
    other = arrive(phone, live_server, child)
    assert other.hit_id != assignment.hit_id
    other_check = ModelCheck.objects.get(qa_pair=other.hit.qa_pair)
    expect(phone.locator("#model-answer")).to_have_text(shown_model_answer(other_check))
    assert overflow(phone) == []
    phone.locator("label[for=verdict-model_right]").tap()
    expect(phone.locator("#verdict-model_right")).to_be_checked()
    assert serious_violations(phone) == []
    phone.screenshot(path=str(artifacts_dir / "verdict-validation-phone.png"), full_page=True)
    phone.locator("#hit-form button[type=submit]").tap()
    expect(phone.get_by_text("Your answers are saved")).to_be_visible()
    phone_context.close()
    assert ModelCheck.objects.get(pk=other_check.pk).validation == "disputed"
    assert not errors_js, errors_js
