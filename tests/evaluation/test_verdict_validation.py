"""Validation of the model in the loop's "fooled" verdicts by a second worker, on a real SyllabusQA syllabus:
the validation batch made from the batch page (and automatically), who may make it, the HIT a second worker
sees and what their choice records, the validated rate on the batch page and in the release.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotation import question_types as qt
from annotation.hits import handler_for
from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.hits.verdict_validation import CHOICES, MODEL_RIGHT, MODEL_WRONG, WORKER_WRONG, validation_of
from annotation.models import HIT, Assignment, Batch, ModelCheck
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
from crowd.models import Consent, Worker
from evaluation.services.model_checks import fooled_rates, validation_summary
from tests.annotation.test_syllabus_hit import CORPUS, claimed_hit, form_fields
from tests.evaluation.test_model_checks import launch_loop_batch, loop_hit  # noqa: F401 - a fixture
from tests.factories import make_researcher
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS
from worker import hit_links
from worker.admission import Refused
from worker.assigning import claim_next

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(
    client: Any,
    loop_hit: dict[str, Any],  # noqa: F811 - the fixture imported above
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> dict[str, Any]:
    """The real syllabus's 14 pairs submitted in a batch with the model in the loop, each with its check."""
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    assert response.status_code in (200, 302)
    checks = list(ModelCheck.objects.filter(assignment=loop_hit["assignment"]).order_by("position"))
    assert len(checks) == len(CARD_TYPES) and all(c.qa_pair_id for c in checks)
    fooled = [c for c in checks if c.verdict == ModelCheck.Verdict.FOOLED]
    # The search baseline with Lexical Match is fooled by most real pairs (all of this syllabus's).
    assert len(fooled) >= len(checks) // 2
    return {**loop_hit, "checks": checks, "fooled": fooled}


def researcher_client() -> Client:
    browser = Client()
    browser.force_login(make_researcher(f"r{get_user_model().objects.count()}"))
    return browser


def second_worker(batch: Batch, name: str = "w2") -> tuple[Worker, Assignment]:
    """A second local worker who consents and claims the next validation HIT."""
    worker = Worker.objects.get_or_create_for("local", name)
    Consent.objects.create(worker=worker, batch=batch)
    assignment = claim_next(batch, worker)
    assert assignment is not None
    return worker, assignment


def test_validation_of__a_strict_majority_confirms() -> None:
    assert validation_of([]) == ""
    assert validation_of([MODEL_WRONG]) == "confirmed"
    assert validation_of([MODEL_RIGHT]) == "disputed"
    assert validation_of([WORKER_WRONG]) == "disputed"
    assert validation_of([MODEL_WRONG, MODEL_RIGHT]) == "disputed"  # a tie does not confirm
    assert validation_of([MODEL_WRONG, MODEL_WRONG, WORKER_WRONG]) == "confirmed"


def test_kind__a_handler_of_its_own_made_from_a_syllabus_batch_only() -> None:
    kind = handler_for(Batch.Kind.SYLLABUS_QA).verdict_validation_kind
    assert kind == Batch.Kind.VERDICT_VALIDATION
    assert handler_for(Batch.Kind.SCREENING).verdict_validation_kind is None
    handler = handler_for(kind)
    assert handler.accepts_field("verdict") and handler.accepts_field("note")
    assert not handler.accepts_field("qa-0-question")
    assert handler.tutorial().consent.typical_minutes == (2, 10)
    with pytest.raises(BatchSpecError, match="made from a syllabus batch"):
        create_batch(BatchSpec(kind=kind, corpus=CORPUS, provider="local"))


def test_page_button__one_hit_per_fooled_pair_once(submitted: dict[str, Any]) -> None:
    batch = submitted["batch"]
    browser = researcher_client()
    page = browser.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    n = len(submitted["fooled"])
    assert f"Validate {n} fooled verdict" in page
    assert f"0 of {n} fooled verdict" in page
    response = browser.post(reverse("annotation:batch-validate-verdicts", args=[batch.pk]))
    child = Batch.objects.get(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION)
    assert response.status_code == 302 and response["Location"] == reverse(
        "annotation:batch", args=[child.pk]
    )
    # Made as SciQ's stage 2 is: same platform and corpus, published with its published parent; paid
    # the syllabus HIT's reward per written pair.
    assert child.provider == batch.provider and child.corpus_id == batch.corpus_id
    assert child.status == Batch.Status.PUBLISHED
    assert child.reward_cents == max(1, round(batch.reward_cents / len(CARD_TYPES)))
    hits = list(child.hits.order_by("position"))
    assert sorted(h.qa_pair_id for h in hits) == sorted(c.qa_pair_id for c in submitted["fooled"])
    assert all(h.document_id == submitted["document"].pk for h in hits)
    assert [h.position for h in hits] == list(range(n))
    # Again: nothing new to add, no HIT twice; the button is gone and the batch is linked.
    browser.post(reverse("annotation:batch-validate-verdicts", args=[batch.pk]))
    assert child.hits.count() == n
    assert Batch.objects.filter(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION).count() == 1
    page = browser.get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert "fooled verdicts</button>" not in page and f'href="/batches/{child.pk}/"' in page


def test_page_button__who_may_press_it(submitted: dict[str, Any]) -> None:
    batch = submitted["batch"]
    url = reverse("annotation:batch-validate-verdicts", args=[batch.pk])
    assert Client().post(url).status_code in (302, 403)  # not signed in: the sign-in page or a refusal
    viewer = Client()
    user = get_user_model().objects.create_user("viewer", password="pw-for-tests")
    viewer.force_login(user)
    assert viewer.post(url).status_code in (302, 403)
    assert researcher_client().get(url).status_code == 405
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(make_researcher("csrf"))
    assert csrf.post(url).status_code == 403
    assert (
        researcher_client().post(reverse("annotation:batch-validate-verdicts", args=[99999])).status_code
        == 404
    )
    assert not Batch.objects.filter(kind=Batch.Kind.VERDICT_VALIDATION).exists()
    # A kind without verdict validation creates nothing.
    screening = Batch.objects.create(
        name="s", kind=Batch.Kind.SCREENING, provider="local", corpus=batch.corpus, reward_cents=100
    )
    response = researcher_client().post(reverse("annotation:batch-validate-verdicts", args=[screening.pk]))
    assert response.status_code == 302
    assert not Batch.objects.filter(kind=Batch.Kind.VERDICT_VALIDATION).exists()


def test_validation_hit__second_worker_confirms_or_disputes(client: Any, submitted: dict[str, Any]) -> None:
    batch = submitted["batch"]
    researcher_client().post(reverse("annotation:batch-validate-verdicts", args=[batch.pk]))
    child = Batch.objects.get(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION)
    # The writer never validates their own pairs: no HIT left for them.
    with pytest.raises(Refused, match="no HIT left"):
        claim_next(child, submitted["assignment"].worker)
    _worker, assignment = second_worker(child)
    pair = assignment.hit.qa_pair
    check = ModelCheck.objects.get(qa_pair=pair)
    url = hit_links.url_for(assignment)
    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    import html

    text = html.unescape(body)
    assert pair.question in text and pair.answer in text
    assert (check.model_answer if not check.abstained else qt.NO_ANSWER_TEXT) in text
    for value, label in CHOICES[pair.question_type == qt.NO_ANSWER].items():
        assert f'value="{value}"' in body and label in text
    assert len(page.context["pages"]) == submitted["document"].num_pages
    # Nothing chosen, an unknown choice, a note too long: refused, nothing recorded.
    for bad in ({}, {"verdict": "maybe"}, {"verdict": MODEL_WRONG, "note": "x" * 501}):
        response = client.post(url, bad)
        assert response.status_code == 200 and response.context["errors"], bad
        assert ModelCheck.objects.get(pk=check.pk).validation == ""
    client.post(url, {"verdict": MODEL_WRONG, "note": "Week 3 of the schedule says otherwise."})
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.answers == {"verdict": MODEL_WRONG, "note": "Week 3 of the schedule says otherwise."}
    assert ModelCheck.objects.get(pk=check.pk).validation == "confirmed"
    # A second HIT disputed by a third worker.
    _w3, other = second_worker(child, "w3")
    Client().get(hit_links.url_for(other))
    Client().post(hit_links.url_for(other), {"verdict": MODEL_RIGHT})
    other_check = ModelCheck.objects.get(qa_pair=other.hit.qa_pair)
    assert other_check.validation == "disputed"
    # The rates: validated = confirmed over checked, per type and overall.
    rates = fooled_rates(batch)
    assert rates["overall"]["confirmed"] == 1 and rates["overall"]["disputed"] == 1
    assert rates["overall"]["validated_rate"] == 1 / len(CARD_TYPES)
    group = rates["by_type"][check.question_type]
    assert group["validated_rate"] == 1 / qt.PAIRS_PER_TYPE
    summary = validation_summary(batch)
    assert summary["confirmed"] == 1 and summary["disputed"] == 1 and summary["waiting"] == 0
    page = researcher_client().get(reverse("annotation:batch", args=[batch.pk])).content.decode()
    assert f"2 of {len(submitted['fooled'])} fooled verdicts validated: 1 confirmed" in page
    assert f"{1 / len(CARD_TYPES):.3f}" in page


def test_validation_hit__two_validators_a_tie_disputes(client: Any, submitted: dict[str, Any]) -> None:
    batch = submitted["batch"]
    batch.options = {**batch.options, "stage2_assignments": 2}
    batch.save()
    researcher_client().post(reverse("annotation:batch-validate-verdicts", args=[batch.pk]))
    child = Batch.objects.get(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION)
    assert child.assignments_per_hit == 2
    _w2, first = second_worker(child, "w2")
    w3 = Worker.objects.get_or_create_for("local", "w3")
    Consent.objects.create(worker=w3, batch=child)
    second = claim_next(child, w3)
    assert second is not None and second.hit_id == first.hit_id  # the first HIT's second slot
    check = ModelCheck.objects.get(qa_pair=first.hit.qa_pair)
    client.post(hit_links.url_for(first), {"verdict": MODEL_WRONG})
    assert ModelCheck.objects.get(pk=check.pk).validation == "confirmed"
    Client().post(hit_links.url_for(second), {"verdict": WORKER_WRONG})
    assert ModelCheck.objects.get(pk=check.pk).validation == "disputed"


def test_option__each_submission_sends_its_fooled_pairs(
    client: Any,
    loop_hit: dict[str, Any],  # noqa: F811 - the fixture imported above
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    batch = loop_hit["batch"]
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "show", "validation": True}}
    batch.save()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    fooled = ModelCheck.objects.filter(assignment=loop_hit["assignment"], verdict="fooled")
    child = Batch.objects.get(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION)
    assert sorted(child.hits.values_list("qa_pair_id", flat=True)) == sorted(
        fooled.values_list("qa_pair_id", flat=True)
    )
    assert fooled.count() > 0
    # The job again adds nothing.
    from evaluation.services.model_checks import validate_after_submission

    assert validate_after_submission(loop_hit["assignment"].pk) == {"validation_hits": 0}
    assert HIT.objects.filter(batch=child).count() == fooled.count()


def test_launch_batch__validate_verdicts_needs_the_model(
    shared_data: Callable[[str], Path], tmp_path: Path, settings: Any
) -> None:
    claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = launch_loop_batch("--model-in-the-loop", "show", "--validate-verdicts")
    assert batch.options["model_in_the_loop"]["validation"] is True
    with pytest.raises(CommandError, match="--validate-verdicts"):
        call_command(
            "launch_batch",
            *("--kind", "syllabus_qa", "--provider", "local", "--corpus", CORPUS, "--limit", "1"),
            "--validate-verdicts",
            stdout=io.StringIO(),
        )


def test_release__carries_the_validation_and_the_card_the_validated_rate(
    client: Any, submitted: dict[str, Any], tmp_path: Path
) -> None:
    batch = submitted["batch"]
    researcher_client().post(reverse("annotation:batch-validate-verdicts", args=[batch.pk]))
    child = Batch.objects.get(parent=batch, kind=Batch.Kind.VERDICT_VALIDATION)
    _w2, validator = second_worker(child)
    client.post(hit_links.url_for(validator), {"verdict": MODEL_WRONG})
    confirmed = ModelCheck.objects.get(qa_pair=validator.hit.qa_pair)
    submitted["assignment"].refresh_from_db()
    submitted["assignment"].approve()
    out = io.StringIO()
    call_command(
        "export_release",
        "--sync",
        *("--name", "loop", "--version", "1", "--out", str(tmp_path / "out")),
        *("--batch", str(batch.pk), "--ratios", "1,0,0", "--formats", "jsonl"),
        *("--allow-empty-split", "--allow-short-split"),
        *[arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)],
        stdout=out,
    )
    folder = Path(json.loads(out.getvalue().strip().splitlines()[-1])["path"])
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {row["id"]: row["model_validation"] for row in rows}
    assert by_id.pop(f"crowdqa-{confirmed.qa_pair_id}") == "confirmed"
    assert set(by_id.values()) == {""}
    section = (folder / "card.md").read_text(encoding="utf-8").split("## Model in the loop", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "validated model error rate" in section
    n, k = len(CARD_TYPES), len(submitted["fooled"])
    assert f"| all | {n} | {k} | {k / n:.3f} | 1 | 1 | {1 / n:.3f} |" in section
    kind = confirmed.question_type
    fooled_of_type = sum(1 for c in submitted["fooled"] if c.question_type == kind)
    rate = fooled_of_type / qt.PAIRS_PER_TYPE
    assert f"| {kind} | {qt.PAIRS_PER_TYPE} | {fooled_of_type} | {rate:.3f} | 1 | 1 |" in section
