"""Every HIT page with the keyboard only, on a phone (390x844) and a laptop (1366x768), audited by axe-core.

A worker who uses no mouse completes the Syllabus HIT on a real SyllabusQA syllabus: consent, the
instructions dialog, all 14 cards, answer spans found with the syllabus search and added with Alt+S or
typed / pasted into their boxes and located in the syllabus by the page, then submit; both SciQ HITs
likewise; the screening and expert pages are audited. Every page on the way gets an axe-core audit (no
serious or critical violation), must not scroll sideways, and on the phone has touch targets of at least
44 px; there the syllabus folds away with its Hide/Show button and comes back. Text typed 100 ms before
a reload is still there after it. Screenshots: hit-*-{phone,laptop}.png.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from annotation import question_types as qt
from annotation.models import HIT, Assignment, Batch, QAPair, Validation
from annotation.services.batches import BatchSpec, create_batch
from crowd.models import Consent, Worker
from crowd.services import local_review as review
from evaluation.services.expert import create_expert_batch
from exports.services.releases import register_release
from tests.annotation.test_expert_hit import SPLIT, export_small_release
from tests.annotation.test_sciq_hits import CORPUS, load_passages
from tests.annotation.test_syllabus_hit import claimed_hit
from tests.browser.conftest import SCREENS, overflow, serious_violations, small_targets, tab_to
from worker import hit_links
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db(transaction=True)


def check_page(page: Page, screen: str, name: str, artifacts_dir: Path) -> None:
    """The page as shown now: axe-clean, nothing wider than the screen, big enough targets on a phone."""
    assert serious_violations(page) == [], name
    assert overflow(page) == [], name
    if screen == "phone":
        assert small_targets(page) == [], name
    page.screenshot(path=str(artifacts_dir / f"{name}-{screen}.png"), full_page=screen == "phone")


def keyboard_consent(page: Page) -> None:
    """Tick the consent box and start, with Tab / Space / Enter only."""
    tab_to(page, "input[name=consent]")
    page.keyboard.press("Space")
    tab_to(page, "button[type=submit]")
    page.keyboard.press("Enter")


@pytest.mark.parametrize("screen", list(SCREENS))
def test_syllabus_hit__keyboard_only(
    page: Page,
    live_server: Any,
    shared_data: Any,
    tmp_path: Path,
    settings: Any,
    artifacts_dir: Path,
    screen: str,
) -> None:
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    Consent.objects.filter(worker=hit["assignment"].worker).delete()
    document, cards = hit["document"], hit["cards"]
    js_errors: list[str] = []
    page.on("pageerror", lambda exc: js_errors.append(str(exc)))
    page.set_viewport_size(SCREENS[screen])
    page.goto(live_server.url + hit["url"])
    check_page(page, screen, "hit-consent", artifacts_dir)
    keyboard_consent(page)
    expect(page.locator("#help-dialog")).to_be_visible()
    # The tutorial body is fetched once (cached) when the dialog opens, then audited with the page.
    expect(page.locator("#tutorial-body .type-guide").first).to_be_visible()
    check_page(page, screen, "hit-syllabus-instructions", artifacts_dir)
    page.keyboard.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden()
    check_page(page, screen, "hit-syllabus", artifacts_dir)
    toggle, viewer = page.locator("#syl-toggle"), page.locator("#syl-viewer")
    if screen == "phone":  # the syllabus folds away so the cards get the whole screen, and comes back
        tab_to(page, "#syl-toggle")
        page.keyboard.press("Enter")
        expect(viewer).to_be_hidden()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(toggle).to_have_text("Show syllabus")
        check_page(page, screen, "hit-syllabus-collapsed", artifacts_dir)
        page.keyboard.press("Space")
        expect(viewer).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        expect(toggle).to_have_text("Hide syllabus")
    else:
        expect(toggle).to_be_hidden()

    for i, card in enumerate(cards):
        if i == 0:
            tab_to(page, "#qa-0-question")
        else:
            page.keyboard.press("Alt+n")  # next card, focus on its question
            expect(page.locator(f"#qa-{i}-question")).to_be_focused()
        page.keyboard.insert_text(card["question"])
        if card["type"] != qt.NO_ANSWER:
            tab_to(page, f"#qa-{i}-answer")
            page.keyboard.insert_text(card["answer"])
        for j, (text, _start, _end, _page) in enumerate(card["spans"]):
            if i == 0:
                # Found with the syllabus search, then added with Alt+S (no selection needed).
                tab_to(page, "#doc-search", backwards=True)
                page.keyboard.insert_text(text)
                page.keyboard.press("Enter")
                expect(page.locator("#search-count")).to_have_text(re.compile(r"1 of \d+"))
                page.keyboard.press("Alt+s")
                expect(page.locator(f"#qa-{i}-span-{j}")).to_have_value(text)
                expect(page.locator(f"[name='qa-{i}-span-{j}-start']")).not_to_have_value("")
                # Its notice shows at once for a reader who asked for reduced motion (no fade).
                toast = page.locator(".syl-toast")
                expect(toast).to_contain_text("Added span")
                assert toast.evaluate("el => getComputedStyle(el).transitionDuration") == "0s"
                continue
            tab_to(page, f"#qa-{i}-span-{j}")
            page.keyboard.insert_text(text)  # pasted from the syllabus
            expect(page.locator(f"#qa-{i}-span-{j}-status")).to_contain_text("Found", timeout=10_000)
            if page.locator(f"#qa-{i}-span-{j}-status button").count():
                tab_to(page, f"#qa-{i}-span-{j}-status button")
                page.keyboard.press("Enter")
            expect(page.locator(f"[name='qa-{i}-span-{j}-start']")).not_to_have_value("")
        minimum = qt.step_counts(card["type"])[0]
        for j, step in enumerate(card["steps"]):
            if j >= minimum:
                tab_to(page, f"#card-{i} .add-step")
                page.keyboard.press("Enter")
            else:
                tab_to(page, f"#qa-{i}-step-{j}")
            expect(page.locator(f"#qa-{i}-step-{j}")).to_be_focused()
            page.keyboard.insert_text(step)
        if i == 3:
            check_page(page, screen, "hit-syllabus-card", artifacts_dir)
    for k in range(len(cards)):
        expect(page.locator(f"#step-btn-{k}")).to_have_attribute("data-state", "done")
    tab_to(page, "#hit-form button[type=submit]")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    check_page(page, screen, "hit-syllabus-done", artifacts_dir)
    assert js_errors == []

    pairs = list(
        QAPair.objects.filter(assignment=hit["assignment"]).order_by("position").prefetch_related("spans")
    )
    assert [p.question for p in pairs] == [c["question"].strip() for c in cards]
    for pair, card in zip(pairs, cards, strict=True):
        assert [s.text for s in pair.spans.all()] == [s[0] for s in card["spans"]]
        for span in pair.spans.all():
            assert document.text[span.start : span.end] == span.text
            assert span.page == document.page_of(span.start)


def test_syllabus_hit__text_typed_just_before_a_reload_is_kept(
    page: Page, live_server: Any, shared_data: Any, tmp_path: Path, settings: Any
) -> None:
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    cards = hit["cards"]
    page.goto(live_server.url + hit["url"])
    page.locator("#qa-0-question").focus()
    page.keyboard.insert_text(cards[0]["question"])
    page.wait_for_timeout(100)
    page.reload()
    expect(page.locator("#qa-0-question")).to_have_value(cards[0]["question"])
    # Editing another field afterwards saves both; the late beacon of the old page cannot undo either.
    page.locator("#qa-0-answer").focus()
    page.keyboard.insert_text(cards[0]["answer"])
    page.locator("#qa-0-answer").blur()
    expect(page.locator("#autosave-status")).to_contain_text("Draft saved", timeout=10_000)
    page.wait_for_timeout(300)
    draft = Assignment.objects.get(pk=hit["assignment"].pk).draft
    assert draft["qa-0-question"] == cards[0]["question"] and draft["qa-0-answer"] == cards[0]["answer"]
    page.reload()
    expect(page.locator("#qa-0-question")).to_have_value(cards[0]["question"])
    expect(page.locator("#qa-0-answer")).to_have_value(cards[0]["answer"])


def open_hit(page: Page, live_server: Any, assignment: Assignment, screen: str) -> None:
    """A consenting worker opens the HIT on ``screen``."""
    Consent.objects.get_or_create(worker=assignment.worker, batch=assignment.hit.batch)
    page.set_viewport_size(SCREENS[screen])
    page.goto(live_server.url + hit_links.url_for(assignment))
    expect(page.locator("#hit-form")).to_be_visible()


@pytest.mark.parametrize("screen", list(SCREENS))
def test_sciq_hits__keyboard_only(
    page: Page, live_server: Any, shared_data: Any, artifacts_dir: Path, eager_celery: None, screen: str
) -> None:
    records = load_passages(shared_data("sciq"), 6)
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=2))
    batch.publish()
    js_errors: list[str] = []
    page.on("pageerror", lambda exc: js_errors.append(str(exc)))

    # Stage 1: choose a passage (Space on the radio), write its SciQ question and answer, submit.
    asker = claim_next(batch, Worker.objects.get_or_create_for("local", "asker"))
    open_hit(page, live_server, asker, screen)
    check_page(page, screen, "hit-sciq-question", artifacts_dir)
    tab_to(page, "input[name=passage]")
    page.keyboard.press("Space")
    expect(page.locator("input[name=passage]").first).to_be_checked()
    text = page.locator("[data-passage-card]").first.locator("[data-passage-text]").inner_text()
    record = records[next(t for t in records if t.strip() == text.strip())]
    tab_to(page, "#id_question")
    page.keyboard.insert_text(record.question)
    tab_to(page, "#id_answer")
    page.keyboard.insert_text(record.answer)
    tab_to(page, "#hit-form button[type=submit]")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    pair = QAPair.objects.get(assignment=asker)
    assert (pair.question, pair.answer) == (record.question, record.answer)

    # Stage 2: another worker keeps two suggestions (Space on each box) and writes one distractor.
    review.approve(pair.assignment)
    stage2 = HIT.objects.get(qa_pair=pair)
    checker = claim_next(stage2.batch, Worker.objects.get_or_create_for("local", "checker"))
    open_hit(page, live_server, checker, screen)
    check_page(page, screen, "hit-sciq-distractor", artifacts_dir)
    for k in (0, 1):
        tab_to(page, f".suggestion:nth-child({k + 1}) input[name=suggested]")
        page.keyboard.press("Space")
    tab_to(page, "#id_own-0")
    page.keyboard.insert_text(record.distractors[0])
    tab_to(page, "#hit-form button[type=submit]")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Your answers are saved")).to_be_visible()
    validation = Validation.objects.get(qa_pair=pair)
    assert validation.distractors.count() == 3
    assert js_errors == []


def test_screening_and_expert_pages__audited(
    page: Page, live_server: Any, shared_data: Any, tmp_path: Path, settings: Any, artifacts_dir: Path
) -> None:
    screening = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SCREENING)
    release = register_release(export_small_release(shared_data("syllabusqa"), tmp_path / "expert"))
    expert_batch = create_expert_batch(release, 1, seed=0, split=SPLIT)
    expert_worker = Worker.objects.get_or_create_for("local", "expert")
    expert_worker.is_expert = True
    expert_worker.save(update_fields=["is_expert"])
    expert = claim_next(expert_batch, expert_worker)
    for screen in SCREENS:
        open_hit(page, live_server, screening["assignment"], screen)
        expect(page.locator("#quiz")).to_be_visible()
        check_page(page, screen, "hit-screening", artifacts_dir)
        open_hit(page, live_server, expert, screen)
        check_page(page, screen, "hit-expert", artifacts_dir)
