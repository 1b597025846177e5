"""Exporting an approved SciQ batch whose only question its stage-2 validator flagged (the researcher
journey's release): the default aggregated verdict leaves the question out, and the refusal says so and
names the option that keeps it, instead of claiming the selection holds nothing that is not rejected."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Assignment, Job, Validation
from crowd.aggregation import ACCEPT, REJECT, Judgement
from crowd.simulation import SimItem
from exports.services.exporting import ExportRequest, ExportRequestError, check_request
from tests.crowd.stage2_collection import Collection, build_collection
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


def _approved_batch(flags: list[str]) -> Collection:
    """One approved SciQ question; its one validation (with ``flags``) approved too, as in the journey."""
    item = SimItem(
        id="q", question="With which force does the moon move the tides?", answer="gravity", truth=ACCEPT
    )
    collection = build_collection([item], [Judgement("q", "validator", REJECT if flags else ACCEPT)])
    validation = Validation.objects.get()
    validation.flags = flags
    validation.save(update_fields=["flags"])
    Assignment.objects.filter(pk=validation.assignment_id).update(status=Assignment.Status.APPROVED)
    return collection


def _request(collection: Collection, tmp_path: Path, **changes: object) -> ExportRequest:
    return ExportRequest(
        name="crowd-sciq", version="1.0", out_dir=str(tmp_path), batches=(collection.stage1.pk,), **changes
    )


def test_flagged_only_question__refusal_names_the_verdict_and_the_way_out(tmp_path: Path) -> None:
    collection = _approved_batch(["too_specific"])
    with pytest.raises(ExportRequestError) as refused:
        check_request(_request(collection, tmp_path))
    assert refused.value.field == "aggregation"
    message = str(refused.value)
    assert "1 question was left out" in message and "dawid_skene" in message
    assert "Keep every validated question" in message and "not rejected" not in message

    # Keeping every validated question exports it; only the empty splits are left to confirm.
    problems = check_request(_request(collection, tmp_path, aggregation="none"))
    assert {p.code for p in problems} >= {"empty_split"}


def test_unflagged_question__is_exported_by_the_default_verdict(tmp_path: Path) -> None:
    collection = _approved_batch([])
    problems = check_request(_request(collection, tmp_path))
    assert "empty_split" in {p.code for p in problems}


def test_batch_with_nothing_approved__says_to_approve_first(tmp_path: Path) -> None:
    collection = _approved_batch([])
    Assignment.objects.filter(hit__batch=collection.stage1).update(status=Assignment.Status.SUBMITTED)
    with pytest.raises(ExportRequestError, match="no approved QA pair") as refused:
        check_request(_request(collection, tmp_path))
    assert refused.value.field == "batches"


def test_new_release_page__keeps_the_flagged_question_when_asked(settings, tmp_path: Path) -> None:
    from config.celery import app

    settings.CROWDQA_RELEASES_DIR = tmp_path / "releases"
    settings.VAR_DIR = tmp_path / "var"
    collection = _approved_batch(["too_specific"])
    client = Client()
    client.force_login(make_researcher("rosa"))
    form = {
        "name": "crowd-sciq",
        "version": "1.0",
        "source": "batches",
        "batches": [str(collection.stage1.pk)],
        "ratio_train": "0.8",
        "ratio_val": "0.1",
        "ratio_test": "0.1",
        "seed": "0",
        "formats": ["jsonl"],
    }
    new_page = client.get(reverse("exports:new")).content.decode()
    assert 'name="aggregation" value="none"' in new_page and "Stage-2 validation" in new_page
    old, app.conf.task_always_eager = app.conf.task_always_eager, True
    try:
        failed = client.post(reverse("exports:new"), form, follow=True)
        kept = client.post(reverse("exports:new"), {**form, "aggregation": "none"}, follow=True)
        bogus = client.post(reverse("exports:new"), {**form, "aggregation": "glad"})
    finally:
        app.conf.task_always_eager = old
    text = failed.content.decode()
    assert failed.status_code == 200 and 'id="export-error"' in text
    assert "Keep every validated question" in text and "ExportRequestError" not in text
    assert reverse("exports:new") in text
    jobs = list(Job.objects.order_by("pk"))
    assert [j.status for j in jobs] == [Job.Status.FAILED, Job.Status.FAILED]
    assert jobs[1].params["aggregation"] == "none"
    assert [p["code"] for p in jobs[1].result["refused"]][:1] == ["empty_split"]
    assert 'id="export-refused"' in kept.content.decode()
    assert bogus.status_code == 200 and "glad" in bogus.content.decode() and Job.objects.count() == 2
