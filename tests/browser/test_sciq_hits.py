"""Both SciQ HITs end to end in headless Chromium, as two local workers, on real SciQ passages.

Worker A and worker B open the stage-1 batch at the same time (different passages); A makes mistakes,
reloads mid-way (the autosaved draft comes back) and submits a question holding HTML; the researcher
approves it, which creates the stage-2 HIT; B validates it (the question shows as text), keeps two
suggestions, cannot keep a third, writes the correct answer as a distractor (refused, fields kept) and
then submits a real SciQ distractor.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation.models import HIT, Assignment, Batch, Distractor, QAPair, Validation
from annotation.services.batches import BatchSpec, create_batch
from crowd.invites import create_invites
from crowd.services import local_review as review
from tests.annotation.test_sciq_hits import CORPUS, load_passages
from tests.browser.conftest import LAPTOP, consent_and_close_instructions, full_page_shot

pytestmark = pytest.mark.django_db(transaction=True)


def _passage_ids(page: Page) -> set[str]:
    values = page.locator("input[name=passage]").evaluate_all("els => els.map(e => e.value)")
    return set(values) - {"none"}


def test_sciq_hits__two_workers_end_to_end(
    live_server: Any,
    page: Page,
    browser: Any,
    artifacts_dir: Path,
    shared_data: Callable[[str], Path],
    eager_celery: None,
    settings: Any,
) -> None:
    records = load_passages(shared_data("sciq"), 12)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=4))
    batch.publish()
    invite_a = create_invites(1, batch=batch, base_url=live_server.url)[0]
    invite_b = create_invites(1, batch=batch, base_url=live_server.url)[0]
    context_b = browser.new_context(viewport=LAPTOP)
    page_b = context_b.new_page()
    js_errors: list[str] = []
    page.on("pageerror", lambda exc: js_errors.append(str(exc)))
    page_b.on("pageerror", lambda exc: js_errors.append(str(exc)))

    # Both workers press Start at the same time and get HITs with different passages.
    page.goto(invite_a.url)
    page_b.goto(invite_b.url)
    page.get_by_role("button", name="Start").click(no_wait_after=True)
    page_b.get_by_role("button", name="Start").click(no_wait_after=True)
    consent_and_close_instructions(page)
    consent_and_close_instructions(page_b)
    shown_a, shown_b = _passage_ids(page), _passage_ids(page_b)
    assert len(shown_a) == len(shown_b) == 3 and not shown_a & shown_b

    # Worker A chooses passage 1 by clicking its card; the arrow keys move between the radios.
    cards = page.locator("[data-passage-card]")
    expect(cards).to_have_count(4)
    cards.nth(0).click()
    radios = page.locator("input[name=passage]")
    expect(radios.nth(0)).to_be_checked()
    page.keyboard.press("ArrowDown")
    expect(radios.nth(1)).to_be_checked()
    page.keyboard.press("ArrowUp")
    expect(radios.nth(0)).to_be_checked()
    passage_text = cards.nth(0).locator("[data-passage-text]").inner_text()
    record = records[next(t for t in records if t.strip() == passage_text.strip())]

    # First try: a yes/no question and a five-word answer. The counters react while typing.
    page.keyboard.press("Tab")  # from the radio group to the question
    yes_no = "Is a frameshift mutation a change in the reading frame?"
    page.keyboard.type(yes_no)
    expect(page.locator("#question-count")).to_have_text("10 / 6-30 words")
    expect(page.locator("#question-live")).to_be_visible()
    # Mid-way the worker reloads the page: the autosaved draft comes back.
    page.locator("#id_answer").focus()  # leaving the question saves the draft
    expect(page.locator("#autosave-status")).to_contain_text("Draft saved", timeout=10_000)
    page.reload()
    expect(page.locator("#id_question")).to_have_value(yes_no)
    expect(radios.nth(0)).to_be_checked()
    page.fill("#id_answer", "a change of the frame")
    expect(page.locator("#answer-count")).to_have_text("5 / max 3 words")
    page.fill("#id_answer", "quasar")
    expect(page.locator("#answer-live")).to_be_visible()  # not in the passage: a warning only
    page.fill("#id_answer", "a change of the frame")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".error-summary")).to_contain_text("Please fix 2 problems")
    expect(page.locator("#question-error")).to_contain_text("Yes/no questions are not allowed")
    expect(page.locator("#answer-error")).to_contain_text("Answer has 5 words, at most 3")
    expect(page.locator("#id_question")).to_have_value(yes_no)
    expect(page.locator("#id_answer")).to_have_value("a change of the frame")
    expect(radios.nth(0)).to_be_checked()
    full_page_shot(page, artifacts_dir / "sciq-question-errors.png")

    # Second try: the real SciQ question (with some HTML in it) and its answer.
    question = record.question.rstrip("?") + " <em>(in one word)</em>?"
    page.fill("#id_question", question)
    page.fill("#id_answer", record.answer)
    expect(page.locator("#answer-live")).to_be_hidden()
    expect(page.locator("#answer-count")).to_have_text(f"{len(record.answer.split())} / max 3 words")
    full_page_shot(page, artifacts_dir / "sciq-question-hit.png")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Your answers are saved.")).to_be_visible()
    pair = QAPair.objects.get(question=question)
    assert pair.answer == record.answer and pair.passage.used_by_id == pair.pk
    assert pair.assignment.time_on_task_seconds is not None

    # A researcher previews another stage-1 HIT: read-only.
    settings.CROWDQA_PUBLIC_DASHBOARD = True
    other_hit = batch.hits.exclude(assignments__isnull=False).first()
    preview = context_b.new_page()
    preview.goto(f"{live_server.url}/hit/preview/{other_hit.pk}/")
    expect(preview.locator(".preview-banner")).to_be_visible()
    expect(preview.locator("#id_question")).to_be_disabled()
    expect(preview.locator("input[name=passage]").first).to_be_disabled()
    full_page_shot(preview, artifacts_dir / "sciq-preview.png")
    preview.close()

    # Approving A's work creates the stage-2 HIT with six suggestions from the named fallback.
    review.approve(pair.assignment)
    stage2 = HIT.objects.get(qa_pair=pair)
    assert stage2.batch.kind == Batch.Kind.SCIQ_DISTRACTOR and stage2.batch.status == Batch.Status.PUBLISHED
    suggestions = list(pair.distractors.filter(origin=Distractor.Origin.MODEL).order_by("model_rank"))
    assert len(suggestions) == 6 and suggestions[0].model_version == "wordnet-sibling-fallback"

    # Worker A does not see the stage-2 batch (their own question); worker B takes it from the home page.
    page.goto(f"{live_server.url}/work/")
    expect(page.get_by_text("Check a science exam question")).to_have_count(0)
    page_b.goto(f"{live_server.url}/work/")
    card = page_b.locator(".card", has_text="Check a science exam question")
    card.get_by_role("button", name="Start next HIT").click()
    consent_and_close_instructions(page_b)
    expect(page_b.locator("#qa-question")).to_have_text(question)  # shown as text, not markup
    assert page_b.locator("#qa-question em").count() == 0
    expect(page_b.locator("input[name=suggested]")).to_have_count(6)
    page_b.get_by_text("Show the passage").click()
    expect(page_b.locator(".qa-passage p")).to_be_visible()

    # Keep two suggestions: the other four are disabled. Write the correct answer as a distractor.
    page_b.check("input[name=flag][value=too_specific]")
    boxes = page_b.locator("input[name=suggested]")
    boxes.nth(0).check()
    boxes.nth(2).check()
    expect(page_b.locator("#suggested-count")).to_have_text("2 / 2 kept")
    for i in (1, 3, 4, 5):
        expect(boxes.nth(i)).to_be_disabled()
    expect(page_b.locator("#own-needed")).to_have_text("0 / 1 written")
    expect(page_b.locator("#id_own-1")).to_be_hidden()
    page_b.fill("#id_own-0", record.answer.upper())
    page_b.get_by_role("button", name="Submit").click()
    expect(page_b.locator("#own-0-error")).to_contain_text("is the correct answer")
    expect(page_b.locator("#id_own-0")).to_have_value(record.answer.upper())
    expect(boxes.nth(0)).to_be_checked()
    expect(boxes.nth(2)).to_be_checked()
    expect(page_b.locator("input[name=flag][value=too_specific]")).to_be_checked()
    full_page_shot(page_b, artifacts_dir / "sciq-distractor-errors.png")

    # Fix it with one of SciQ's own distractors for this question, and submit.
    page_b.fill("#id_own-0", record.distractors[0])
    expect(page_b.locator("#total-note")).to_have_text(re.compile(r"2 kept \+ 1 written = 3 of 3"))
    full_page_shot(page_b, artifacts_dir / "sciq-distractor-hit.png")
    page_b.get_by_role("button", name="Submit").click()
    expect(page_b.get_by_text("Your answers are saved.")).to_be_visible()
    validation = Validation.objects.get(qa_pair=pair)
    assert validation.flags == ["too_specific"]
    chosen = list(validation.distractors.order_by("position").values_list("text", "origin"))
    assert chosen == [
        (suggestions[0].text, "model"),
        (suggestions[2].text, "model"),
        (record.distractors[0], "worker"),
    ]
    assert Assignment.objects.get(validation=validation).time_on_task_seconds is not None
    assert js_errors == []
    context_b.close()
