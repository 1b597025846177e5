"""The model in the loop during collection, on a real SyllabusQA syllabus: the card's check through the HIT
link (queue, poll, fail open, who may ask), the record on each stored pair after submission, and the
batch's per-type fooled rates.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import question_types as qt
from annotation.batch_options import BatchOptionsError
from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.models import Assignment, Batch, ModelCheck, QAPair
from evaluation.model_in_the_loop import system_version
from evaluation.services import model_checks
from evaluation.services.model_checks import (
    LoopSettings,
    card_key,
    fooled_rates,
    loop_settings,
    record_submission,
)
from exports.model_loop import MODEL_FIELDS
from tests.annotation.test_syllabus_hit import CORPUS, claimed_hit, form_fields
from tests.factories import make_researcher
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def eager(eager_celery: None) -> Iterator[None]:
    """Celery jobs run inline, as a worker would run them."""
    yield


@pytest.fixture
def loop_hit(shared_data: Callable[[str], Path], tmp_path: Path, settings: Any) -> dict[str, Any]:
    """A claimed syllabus HIT on a real syllabus whose batch asks the search baseline (mode ``ask``)."""
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = hit["batch"]
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "ask", "judge": "lexical"}}
    batch.save()
    hit["check_url"] = hit["url"].rstrip("/") + "/model-check/"
    return hit


def ask(client: Any, hit: dict[str, Any], card: int) -> dict[str, Any]:
    """POST the card as the page does, then GET its result under the returned key."""
    data = form_fields(hit["cards"])
    posted = client.post(
        hit["check_url"],
        {"card": card, "question": data[f"qa-{card}-question"], "answer": data[f"qa-{card}-answer"]},
    )
    assert posted.status_code == 202, posted.content
    body = posted.json()
    assert body["status"] == "pending" and body["mode"] == "ask"
    got = client.get(hit["check_url"], {"card": card, "key": body["key"]})
    assert got.status_code == 200
    return got.json()


def test_batch_option__shape_checked() -> None:
    batch = Batch(kind=Batch.Kind.SYLLABUS_QA, name="x")
    for bad in ({"mode": "maybe"}, {"mode": "show", "judge": "exact"}, {"mode": "show", "threshold": 2}, {}):
        batch.options = {"model_in_the_loop": bad}
        with pytest.raises(BatchOptionsError, match="model_in_the_loop"):
            batch.save()


def test_card_check__answered_on_the_real_syllabus_and_kept(
    client: Any, loop_hit: dict[str, Any], eager: None
) -> None:
    page = client.get(loop_hit["url"])
    assert 'data-model-mode="ask"' in page.content.decode()
    assert page.content.decode().count('class="model-check"') == len(CARD_TYPES)
    verdicts = set()
    for card in range(len(CARD_TYPES)):
        result = ask(client, loop_hit, card)
        assert result["status"] == "answered", result
        assert result["system"] == "search" and result["judge"] == "lexical"
        assert result["verdict"] in ("fooled", "matched") and result["latency_ms"] >= 0
        assert result["abstained"] or result["model_answer"] in loop_hit["document"].text
        verdicts.add(result["verdict"])
    checks = ModelCheck.objects.filter(assignment=loop_hit["assignment"])
    assert checks.count() == len(CARD_TYPES)
    assert {c.source for c in checks} == {"page"}
    assert all(c.model_version == system_version("search") for c in checks)
    assert all(c.worker_answer == qt.NO_ANSWER_TEXT for c in checks if c.question_type == qt.NO_ANSWER)
    # A stale key (the card changed since) is still pending; a new check replaces the card's row.
    assert (
        client.get(loop_hit["check_url"], {"card": 0, "key": card_key("other", "x")}).json()["status"]
        == "pending"
    )
    assert len(verdicts) >= 1


def test_card_check__fails_open_when_the_model_fails(
    client: Any, loop_hit: dict[str, Any], eager: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("model down")

    monkeypatch.setattr("evaluation.model_in_the_loop.check_pair", broken)
    result = ask(client, loop_hit, 2)
    assert result["status"] == "pending"  # nothing stored: the page's wait runs out into "no model answer"
    assert not ModelCheck.objects.exists()
    # Submitting is not touched by the model: 14 pairs are stored, none checked.
    response = client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    assert response.status_code in (200, 302)
    loop_hit["assignment"].refresh_from_db()
    assert loop_hit["assignment"].status == Assignment.Status.SUBMITTED
    assert QAPair.objects.filter(assignment=loop_hit["assignment"]).count() == len(CARD_TYPES)
    rates = fooled_rates(loop_hit["batch"])
    assert rates["overall"]["checked"] == 0 and rates["unchecked"] == len(CARD_TYPES)


def test_card_check__broker_down_answers_unavailable(
    client: Any, loop_hit: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from evaluation import loop_tasks

    def down(*_args: Any, **_kwargs: Any) -> Any:
        raise ConnectionError("broker down")

    monkeypatch.setattr(loop_tasks.model_check_card, "delay", down)
    data = form_fields(loop_hit["cards"])
    response = client.post(
        loop_hit["check_url"], {"card": 0, "question": data["qa-0-question"], "answer": "Yes"}
    )
    assert response.status_code == 200 and response.json()["status"] == "unavailable"


def test_card_check__refuses_what_it_must(client: Any, loop_hit: dict[str, Any], eager: None) -> None:
    url = loop_hit["check_url"]
    for bad in (
        {"card": "14", "question": "What is due?"},
        {"card": "-1", "question": "x y"},
        {"card": "a"},
        {"card": "0"},
    ):
        assert client.post(url, bad).status_code == 400, bad
    assert client.get(url, {"card": "99", "key": "x"}).status_code == 400
    # Text no database stores is dropped before the model sees it, on SQLite as on PostgreSQL.
    hostile = client.post(url, {"card": "3", "question": "When\x00 is the exam?", "answer": "a\x00b"})
    assert hostile.status_code == 202, hostile.content
    assert ModelCheck.objects.get(position=3).question == "When is the exam?"
    assert client.put(url).status_code == 405
    # A forged link opens nothing.
    assert client.post("/a/not-a-token/model-check/", {"card": "0", "question": "a b"}).status_code == 404
    # A batch that asks no model has no check.
    batch = loop_hit["batch"]
    batch.options = {k: v for k, v in batch.options.items() if k != "model_in_the_loop"}
    batch.save()
    assert client.post(url, {"card": "0", "question": "a b c", "answer": "Yes"}).status_code == 404
    assert 'class="model-check"' not in client.get(loop_hit["url"]).content.decode()
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "show"}}
    batch.save()
    # A submitted assignment takes no more checks.
    client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    assert client.post(url, {"card": "0", "question": "a b c", "answer": "Yes"}).status_code in (
        409,
        410,
        403,
    )


def test_submission__every_pair_gets_its_check(
    client: Any, loop_hit: dict[str, Any], eager: None, django_capture_on_commit_callbacks: Any
) -> None:
    cards = loop_hit["cards"]
    ask(client, loop_hit, 0)  # unchanged at submission: kept
    ask(client, loop_hit, 2)
    data = form_fields(cards)
    data["qa-2-question"] = data["qa-2-question"] + " Please answer briefly."  # changed since: asked again
    before = {c.position: c.pk for c in ModelCheck.objects.all()}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(loop_hit["url"], data)
    assert response.status_code in (200, 302)
    pairs = list(QAPair.objects.filter(assignment=loop_hit["assignment"]).order_by("position"))
    assert len(pairs) == len(CARD_TYPES)
    checks = {c.position: c for c in ModelCheck.objects.filter(assignment=loop_hit["assignment"])}
    assert all(c.qa_pair_id == pairs[c.position].pk for c in checks.values())
    assert len(checks) == len(CARD_TYPES)
    assert checks[0].source == "page" and checks[0].pk == before[0]
    assert checks[2].source == "submission" and checks[2].question == pairs[2].question
    assert {checks[i].source for i in range(3, len(CARD_TYPES))} == {"submission"}
    # Running the job again changes nothing.
    assert record_submission(loop_hit["assignment"].pk) == {"linked": 0, "asked": 0, "unanswered": 0}
    rates = fooled_rates(loop_hit["batch"])
    assert rates["overall"]["checked"] == len(CARD_TYPES) and rates["unchecked"] == 0
    for name in qt.SYLLABUS_TYPES:
        group = rates["by_type"][name]
        assert group["checked"] == qt.PAIRS_PER_TYPE
        assert group["fooled_rate"] == group["fooled"] / qt.PAIRS_PER_TYPE
    fooled = sum(c.verdict == "fooled" for c in checks.values())
    assert rates["overall"]["fooled"] == fooled
    assert rates["calls"] == len(CARD_TYPES) + 1  # card 3's first check was replaced, not added
    # The batch page shows the rates per type, to researchers.
    url = reverse("annotation:batch", args=[loop_hit["batch"].pk])
    client.force_login(make_researcher("r"))
    body = client.get(url).content.decode()
    assert 'id="model-loop"' in body and "Lexical Match" in body
    for name in qt.SYLLABUS_TYPES:
        group = rates["by_type"][name]
        assert f'<th scope="row">{name}</th><td class="num">{group["checked"]}</td>' in body
    assert f"{rates['overall']['fooled_rate']:.3f}" in body
    # The assignment's review page shows each pair's verdict and the model's answer.
    review = client.get(reverse("annotation:assignment", args=[loop_hit["assignment"].pk])).content.decode()
    assert review.count('class="model-check-row"') == len(CARD_TYPES)
    assert f"Model {checks[0].get_verdict_display().lower()} (lexical {checks[0].score:.2f})" in review


def launch_loop_batch(*options: str) -> Batch:
    """``launch_batch`` of one local syllabus QA HIT with ``options`` (the model-in-the-loop flags)."""
    out = io.StringIO()
    call_command(
        "launch_batch",
        *("--kind", "syllabus_qa", "--provider", "local", "--corpus", CORPUS, "--limit", "1"),
        *options,
        stdout=out,
    )
    return Batch.objects.get(pk=json.loads(out.getvalue().strip().splitlines()[-1])["batch"])


def test_launch_batch__sets_the_option_for_syllabus_batches_only(
    shared_data: Callable[[str], Path], tmp_path: Path, settings: Any
) -> None:
    claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = launch_loop_batch("--model-in-the-loop", "show", "--model-judge", "rouge_l")
    assert batch.options["model_in_the_loop"] == {
        "mode": "show",
        "system": "search",
        "judge": "rouge_l",
        "validation": False,
    }
    assert loop_settings(batch) == LoopSettings(mode="show", judge="rouge_l")
    with pytest.raises(CommandError, match="no model in the loop"):
        call_command(
            "launch_batch",
            *("--kind", "screening", "--provider", "local", "--corpus", CORPUS, "--limit", "1"),
            *("--model-in-the-loop", "ask"),
            stdout=io.StringIO(),
        )


def test_rates__validated_rate_counts_confirmed_fooled_only() -> None:
    rows = [
        (qt.YES_NO, "fooled", "confirmed"),
        (qt.YES_NO, "fooled", "disputed"),
        (qt.YES_NO, "matched", ""),
        (qt.YES_NO, "fooled", ""),
    ]
    group = model_checks._rates(rows)[qt.YES_NO]
    assert group["checked"] == 4 and group["fooled"] == 3 and group["fooled_rate"] == 0.75
    assert group["confirmed"] == 1 and group["disputed"] == 1 and group["validated_rate"] == 0.25
    assert model_checks._rates([])[qt.NO_ANSWER]["fooled_rate"] is None


def test_release__carries_the_checks_and_the_card_reports_rates(
    client: Any,
    loop_hit: dict[str, Any],
    eager: None,
    django_capture_on_commit_callbacks: Any,
    tmp_path: Path,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    assignment = loop_hit["assignment"]
    assignment.refresh_from_db()
    assignment.approve()
    out = io.StringIO()
    call_command(
        "export_release",
        "--sync",
        *("--name", "loop", "--version", "1", "--out", str(tmp_path / "out")),
        *("--batch", str(loop_hit["batch"].pk), "--ratios", "1,0,0", "--formats", "csv,jsonl"),
        *("--allow-empty-split", "--allow-short-split"),
        *[arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)],
        stdout=out,
    )
    folder = Path(json.loads(out.getvalue().strip().splitlines()[-1])["path"])
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(CARD_TYPES)
    checks = {f"crowdqa-{c.qa_pair_id}": c for c in ModelCheck.objects.filter(assignment=assignment)}
    for row in rows:
        check = checks[row["id"]]
        assert {k: row[k] for k in MODEL_FIELDS} == {
            "model_system": "search",
            "model_version": system_version("search"),
            "model_answer": check.model_answer,
            "model_abstained": check.abstained,
            "model_judge": "lexical",
            "model_verdict": check.verdict,
            "model_score": check.score,
            "model_latency_ms": check.latency_ms,
            "model_validation": "",
        }
    # The CSV keeps the original SyllabusQA schema.
    header = (folder / "train.csv").read_text(encoding="utf-8").splitlines()[0]
    assert "model" not in header
    card = (folder / "card.md").read_text(encoding="utf-8")
    section = card.split("## Model in the loop", 1)[1].split("\n## ", 1)[0]
    assert f"{len(CARD_TYPES)} of {len(CARD_TYPES)} QA pairs" in section
    fooled = sum(r["model_verdict"] == "fooled" for r in rows)
    assert f"| all | {len(CARD_TYPES)} | {fooled} | {fooled / len(CARD_TYPES):.3f} |" in section
    for name in qt.SYLLABUS_TYPES:
        n = sum(r["model_verdict"] == "fooled" for r in rows if r["question_type"] == name)
        assert f"| {name} | {qt.PAIRS_PER_TYPE} | {n} | {n / qt.PAIRS_PER_TYPE:.3f} |" in section


def test_sweep__queues_again_the_checks_the_broker_lost_at_submit(
    client: Any,
    loop_hit: dict[str, Any],
    eager: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import timedelta

    from django_celery_results.models import TaskResult

    from crowd.services.followups import time_limit
    from evaluation import loop_tasks
    from evaluation.services.model_checks import requeue_unchecked, submission_check_id

    def down(*_args: Any, **_kwargs: Any) -> Any:
        raise ConnectionError("broker down")

    with monkeypatch.context() as broken:
        broken.setattr(loop_tasks.model_check_submission, "apply_async", down)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(loop_hit["url"], form_fields(loop_hit["cards"]))
    assert response.status_code in (200, 302)  # the submission is stored all the same
    assignment = loop_hit["assignment"]
    assignment.refresh_from_db()
    assert QAPair.objects.filter(assignment=assignment).count() == len(CARD_TYPES)
    assert not ModelCheck.objects.exists()
    assert fooled_rates(loop_hit["batch"])["unchecked"] == len(CARD_TYPES)
    # Not before the follow-up time limit (the job may just be slow), nor once the window is over.
    assert requeue_unchecked(now=assignment.submitted_at + time_limit() / 2) == []
    assert requeue_unchecked(now=assignment.submitted_at + timedelta(days=2)) == []
    # A job that ran (it left a result) is not queued again, even if the model gave no answer.
    row = TaskResult.objects.create(task_id=submission_check_id(assignment.pk), status="SUCCESS")
    later = assignment.submitted_at + time_limit() + timedelta(seconds=1)
    assert requeue_unchecked(now=later) == []
    # A batch whose model in the loop was turned off since is left alone.
    row.delete()
    batch = loop_hit["batch"]
    options = dict(batch.options)
    batch.options = {**options, "model_in_the_loop": {"mode": "off"}}
    batch.save()
    assert requeue_unchecked(now=later) == []
    batch.options = options
    batch.save()
    # Lost: queued again, and the job (run inline here) checks every pair; then nothing is owed.
    assert requeue_unchecked(now=later) == [assignment.pk]
    assert ModelCheck.objects.filter(qa_pair__assignment=assignment).count() == len(CARD_TYPES)
    assert fooled_rates(batch)["unchecked"] == 0
    assert requeue_unchecked(now=later) == []
    assert loop_tasks.requeue_unchecked_submissions() == {"assignments": []}
