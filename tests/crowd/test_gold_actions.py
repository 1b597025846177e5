"""What the quality checks do to a worker beyond the standing: the one warning message, and a block that
a researcher's manual unblock overrules until new failures arrive.

On real SciQ questions with gold and attention items served among them (the setting of
tests/crowd/test_gold_items.py), simulated workers go through the real HIT pages and the after-submission
job grades them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotation.importers.mcq import MCQRow
from annotation.models import GoldItem, GoldStanding
from crowd.models import Worker, WorkerMessage
from crowd.services.gold import update_standing
from crowd.services.review import ReviewError, unblock_worker
from tests.crowd.test_gold_items import _stage2_with_items, _work
from tests.factories import make_worker

# The eager stage-2 submissions here are about gold and attention items, not the options-only check.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_options_only_check")]


def test_warning__sent_once_when_first_flagged(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stage2, _ = _stage2_with_items(sciq)
    sloppy = make_worker("sloppy")  # right on every gold item, ignores the attention instructions
    done = _work(
        client, stage2, sloppy, key, careful=True, attentive=False, capture=django_capture_on_commit_callbacks
    )
    assert done.count(GoldItem.Kind.ATTENTION) == 2  # warned at the first failure, blocked at the second
    record = GoldStanding.objects.get(batch=stage2, worker=sloppy)
    assert record.state == GoldStanding.State.BLOCKED and record.warning_sent_at is not None
    messages = list(WorkerMessage.objects.filter(worker=sloppy))
    assert len(messages) == 1 and messages[0].batch_id == stage2.pk
    assert (stage2.title or stage2.name) in messages[0].subject
    assert "did not follow it" in messages[0].body and "known answers" not in messages[0].body
    update_standing(stage2, sloppy)  # a recount sends nothing again
    assert WorkerMessage.objects.filter(worker=sloppy).count() == 1

    careful = make_worker("careful")
    _work(
        client, stage2, careful, key, careful=True, attentive=True, capture=django_capture_on_commit_callbacks
    )
    assert not WorkerMessage.objects.filter(worker=careful).exists()


def test_warning__off_by_option_and_a_refusal_is_kept(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stage2, _ = _stage2_with_items(sciq, attention_block=0)
    stage2.options = {**stage2.options, "gold_warn_message": False}
    stage2.save(update_fields=["options"])
    quiet = make_worker("quiet")
    _work(
        client, stage2, quiet, key, careful=True, attentive=False, capture=django_capture_on_commit_callbacks
    )
    record = GoldStanding.objects.get(batch=stage2, worker=quiet)
    assert record.state == GoldStanding.State.WARNED and record.warning_sent_at is None
    assert not WorkerMessage.objects.filter(worker=quiet).exists()

    stage2.options = {**stage2.options, "gold_warn_message": True}
    stage2.save(update_fields=["options"])
    calls: list[str] = []

    def refuse(worker: Worker, batch: Any, subject: str, text: str) -> None:
        calls.append(worker.pseudonym)
        raise ReviewError("the platform is down")

    monkeypatch.setattr("crowd.services.messaging.message_worker", refuse)
    update_standing(stage2, quiet)
    update_standing(stage2, quiet)
    record.refresh_from_db()
    assert calls == [quiet.pseudonym]  # tried once: the claim was stored before sending
    assert record.warning_sent_at is not None and "the platform is down" in record.warning_error


def test_reblock__manual_unblock_stands_until_a_new_failure(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stage2, _ = _stage2_with_items(sciq)
    capture = django_capture_on_commit_callbacks
    wrong = make_worker("wrong")
    _work(client, stage2, wrong, key, careful=False, attentive=True, capture=capture)
    record = GoldStanding.objects.get(batch=stage2, worker=wrong)
    assert record.state == GoldStanding.State.BLOCKED and record.failures_at_block == 4  # 0/4 gold

    unblock_worker(wrong, "reviewed by hand: the passages were ambiguous")
    update_standing(stage2, wrong)  # the same answers recounted (a retried job, a confirmed session)
    wrong.refresh_from_db()
    assert not wrong.blocked
    # right answers from now on: no new failure, so the researcher's decision stands to the end
    done = _work(client, stage2, wrong, key, careful=True, attentive=True, capture=capture)
    wrong.refresh_from_db()
    record.refresh_from_db()
    assert done and not wrong.blocked and record.failures_at_block == 4
    assert record.gold_n == 6 and record.gold_correct == 2 and record.state == GoldStanding.State.BLOCKED

    other = make_worker("other")
    _work(client, stage2, other, key, careful=False, attentive=True, capture=capture)
    unblock_worker(other)
    done = _work(client, stage2, other, key, careful=False, attentive=True, capture=capture)
    other.refresh_from_db()
    record = GoldStanding.objects.get(batch=stage2, worker=other)
    assert other.blocked and done.count(GoldItem.Kind.GOLD) == 1  # blocked again at the next wrong one
    assert record.failures_at_block == 5 and "gold accuracy 0% (0/5)" in other.block_reason
