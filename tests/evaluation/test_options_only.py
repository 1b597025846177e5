"""The SciQ artifact check on real SciQ items: after each stage-2 submission a causal LM scores the four
options after the question alone; an item it answers is flagged ``options_only`` for review (kept when QC
runs again), the batch page shows the rate, a failing model leaves the item unchecked, and releases carry
the fields and a card section.

The model here is a small randomly initialised Llama behind the real scoring path
(:class:`evaluation.llm.HFCausalLMBackend`, ``continuation_logprobs``): the packaged SmolLM2 takes minutes
to load on a busy test machine; ``benchmarks/options_only.py`` runs SmolLM2 itself on the real test split.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.models import Assignment, Batch, OptionsOnlyCheck, QAPair, Validation
from crowd.services import local_review as review
from evaluation.options_only import check_item
from evaluation.services import options_only
from evaluation.services.options_only import check_validation, options_only_rates
from filters.services import qc_queryset
from tests.annotation.test_sciq_hits import (  # noqa: F401 - records is a fixture
    _approve_into_stage2,
    _open,
    _stage1,
    _write_question,
    records,
)
from tests.factories import make_researcher, make_worker
from tests.tiny_llm import tiny_llama
from tests.unit.evaluation.test_mcq import CharTokenizer

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_lm(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A 2-layer Llama (random, seeded) as the scoring model of the job."""
    from evaluation.llm import HFCausalLMBackend

    backend = HFCausalLMBackend(model=tiny_llama(512), tokenizer=CharTokenizer())
    monkeypatch.setattr(options_only, "default_backend", lambda: backend)
    return backend


def validate(client: Client, records: dict, capture: Any, n: int) -> list[Validation]:  # noqa: F811
    """``n`` real SciQ questions written, approved, and given their real distractors by a validator."""
    batch = _stage1(limit=n)
    validations = []
    for i in range(n):
        pair = _write_question(client, batch, make_worker(f"author{i}"), records)
        hit = _approve_into_stage2(pair, capture)
        record = next(r for r in records.values() if r.question == pair.question)
        assignment, url = _open(hit.batch, make_worker(f"validator{i}"))
        own = {f"own-{k}": text for k, text in enumerate(record.distractors[:3])}
        with capture(execute=True):
            response = client.post(url, own)
        assert b"Thank you" in response.content, response.content.decode()[:1500]
        validations.append(Validation.objects.get(assignment=assignment))
    return validations


def test_check_item__option_zero_is_the_answer_and_both_measures_must_pick_it() -> None:
    def prefers(index: int, per_char: int) -> Any:
        def scores(_context: str, continuations: list[str]) -> list[float]:
            values = [-100.0] * len(continuations)
            values[index] = -1.0  # best by total
            values[per_char] = -1.0 + 0.5 * len(continuations[per_char])  # best per character too
            return values

        return scores

    answered = check_item(
        "Which gas do plants take in?", "carbon dioxide", ["oxygen", "helium", "argon"], prefers(0, 0)
    )
    assert answered.answered and answered.options[0] == "carbon dioxide" and len(answered.scores) == 4
    assert not check_item("Q?", "a", ["b", "c", "d"], prefers(2, 2)).answered
    with pytest.raises(ValueError):
        check_item("Q?", "a", [], prefers(0, 0))


def test_after_stage2__each_item_checked_flagged_when_answered_and_shown(
    client: Client,
    records: dict,  # noqa: F811
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
    small_lm: Any,
    tmp_path: Path,
) -> None:
    validations = validate(client, records, django_capture_on_commit_callbacks, 3)
    checks = {c.validation_id: c for c in OptionsOnlyCheck.objects.all()}
    assert set(checks) == {v.pk for v in validations}  # the job ran after each submission
    for validation in validations:
        check = checks[validation.pk]
        pair = QAPair.objects.get(pk=validation.qa_pair_id)
        record = next(r for r in records.values() if r.question == pair.question)
        assert check.options == [pair.normalized_answer or pair.answer, *record.distractors[:3]]
        assert len(check.scores) == 4 and check.model_version == small_lm.name
        assert check.answered == (check.chosen == 0 and check.chosen_per_char == 0)
        assert ("options_only" in pair.qc_flags) == check.answered
    # Idempotent: asking again returns the stored row.
    assert check_validation(validations[0]).pk == checks[validations[0].pk].pk
    assert OptionsOnlyCheck.objects.count() == 3
    # The stage-2 batch page shows the rate.
    batch = Batch.objects.get(pk=validations[0].assignment.hit.batch_id)
    rates = options_only_rates(batch)
    answered = sum(c.answered for c in checks.values())
    assert rates is not None and (rates["checked"], rates["answered"]) == (3, answered)
    browser = Client()
    browser.force_login(make_researcher("r"))
    page = browser.get(f"/batches/{batch.pk}/").content.decode()
    assert f"<strong>{answered} of 3</strong> checked items answered from the options alone" in page


def test_setting_off__no_check_queued_submission_stored(
    client: Client,
    records: dict,  # noqa: F811
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
    small_lm: Any,
    settings: Any,
) -> None:
    settings.CROWDQA_OPTIONS_ONLY_MODEL = " OFF "
    validations = validate(client, records, django_capture_on_commit_callbacks, 2)
    assert len(validations) == 2 and not OptionsOnlyCheck.objects.exists()
    assert not any("options_only" in p.qc_flags for p in QAPair.objects.all())
    assert options_only_rates(Batch.objects.get(pk=validations[0].assignment.hit.batch_id)) is None


def test_flag__kept_when_qc_runs_again_and_released(
    client: Client,
    records: dict,  # noqa: F811
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    def answer_first(_context: str, continuations: list[str]) -> list[float]:
        return [-1.0 if i == 0 else -50.0 * len(c) for i, c in enumerate(continuations)]

    class Scorer:
        name = "answer-first"
        loglikelihoods = staticmethod(answer_first)

    monkeypatch.setattr(options_only, "default_backend", lambda: Scorer())
    validation = validate(client, records, django_capture_on_commit_callbacks, 1)[0]
    pair = QAPair.objects.get(pk=validation.qa_pair_id)
    assert pair.qc_flags.count("options_only") == 1 and pair.qc_severity["options_only"] == "review"
    qc_queryset(QAPair.objects.filter(pk=pair.pk))
    pair.refresh_from_db()
    assert "options_only" in pair.qc_flags and pair.qc_severity["options_only"] == "review"
    # Approved stage 2 -> released with the fields and the card section.
    review.approve(Assignment.objects.get(pk=validation.assignment_id))
    out = io.StringIO()
    call_command(
        "export_release",
        "--sync",
        *("--name", "sciq-check", "--version", "1", "--out", str(tmp_path / "out")),
        *("--batch", str(pair.assignment.hit.batch_id), "--ratios", "1,0,0", "--formats", "jsonl"),
        *("--allow-empty-split", "--allow-short-split"),
        stdout=out,
    )
    folder = Path(json.loads(out.getvalue().strip().splitlines()[-1])["path"])
    rows = [
        json.loads(line) for line in (folder / "multiple_choice" / "train.jsonl").read_text().splitlines()
    ]
    assert [(r["options_only_model"], r["options_only_answered"]) for r in rows] == [("answer-first", True)]
    card = (folder / "card.md").read_text(encoding="utf-8")
    assert "## Answerable from the options alone" in card
    assert "1 of 1 multiple-choice items" in card and "for 1 of them (1.000)" in card


def test_failing_model__item_unchecked_submission_kept(
    client: Client,
    records: dict,  # noqa: F811
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken() -> Any:
        raise OSError("no model here")

    monkeypatch.setattr(options_only, "default_backend", broken)
    validation = validate(client, records, django_capture_on_commit_callbacks, 1)[0]
    assert validation.assignment.status == Assignment.Status.SUBMITTED
    assert not OptionsOnlyCheck.objects.exists()
    assert options_only.check_submission(validation.assignment_id)["options_only"] == "unavailable"
    assert options_only_rates(validation.assignment.hit.batch) is None
