"""The expert answer HIT on a real SyllabusQA syllabus and a real release built from it (SyllabusQA 2.3).

Covers the seeded sample of a release split mapped back to the crowd's pairs, the command's JSON line,
the page (question and syllabus shown, the crowd's answer never), an invalid POST keeping every field and
a valid POST storing one ExpertAnswer, once.
"""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from markupsafe import escape

from annotation import question_types as qt
from annotation.hits import handler_for
from annotation.hits.expert_answer import CONSENT, ExpertAnswerHandler
from annotation.models import Assignment, Batch, ExpertAnswer, QAPair
from annotation.platforms import Platform
from annotation.services.batches import typical_minutes
from crowd.models import Consent, Worker
from evaluation.services.expert import ExpertBatchError, create_expert_batch, sample_item_ids
from exports.dataset import item_id
from exports.release_files import load_index
from exports.services.releases import register_release
from tests.annotation.test_syllabus_hit import CORPUS, import_one_syllabus
from tests.unit.exports.conftest import SYLLABUSQA_PUBLIC_CONTACTS
from worker import hit_links
from worker.assigning import claim_next

SPLIT = "val"  # the real syllabus of test_syllabus_hit is in SyllabusQA's val split


def export_small_release(root: Path, tmp_path: Path) -> Path:
    """Import one real syllabus (text + PDF) and export it with its original split; return the release."""
    import_one_syllabus(root, tmp_path / "source")
    allow = [arg for value in SYLLABUSQA_PUBLIC_CONTACTS for arg in ("--privacy-allow", value)]
    out = StringIO()
    call_command(
        "export_release",
        *("--name", "expert-test", "--version", "1.0", "--out", str(tmp_path / "releases")),
        *("--corpus", CORPUS, "--use-original-splits", "--formats", "csv", "--sync", "--allow-empty-split"),
        *allow,
        stdout=out,
    )
    return Path(json.loads(out.getvalue().strip().splitlines()[-1])["path"])


@pytest.fixture
def expert_release(shared_data: Any, tmp_path: Path, settings: Any) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return export_small_release(shared_data("syllabusqa"), tmp_path)


def hidden_answer_seed(release_dir: Path) -> int:
    """A seed whose one-item sample has a written crowd answer (5+ words, not copied from the syllabus)."""
    for seed in range(100):
        (item,) = sample_item_ids(release_dir, SPLIT, 1, seed)
        pair = QAPair.objects.select_related("document").get(external_id=item)
        answer = pair.answer.strip()
        if len(answer.split()) >= 5 and answer not in pair.document.text:
            return seed
    raise AssertionError("no written (non-copied) crowd answer in the split")


@pytest.mark.django_db
def test_create_expert_batch__seeded_sample_of_the_split(expert_release: Path) -> None:
    release = register_release(expert_release)
    batch = create_expert_batch(release, 12, seed=5, split=SPLIT)
    again = create_expert_batch(release, 12, seed=5, split=SPLIT)
    other = create_expert_batch(release, 12, seed=6, split=SPLIT)
    assert batch.kind == Batch.Kind.EXPERT_ANSWER and batch.status == Batch.Status.PUBLISHED
    assert batch.provider == Platform.LOCAL
    index = load_index(expert_release)["items"]
    hits = list(batch.hits.order_by("position").select_related("qa_pair", "document"))
    assert len(hits) == 12 == len(set(batch.options["items"]))
    assert [item_id(h.qa_pair) for h in hits] == batch.options["items"]
    assert all(index[item_id(h.qa_pair)]["split"] == SPLIT for h in hits)
    assert all(h.document_id == h.qa_pair.document_id for h in hits)
    assert again.options["items"] == batch.options["items"]
    assert other.options["items"] != batch.options["items"]
    with pytest.raises(ExpertBatchError, match="the test split has no items"):
        create_expert_batch(release, 5, split="test")


@pytest.mark.django_db
def test_create_expert_batch__command_prints_batch_and_hits(expert_release: Path) -> None:
    out = StringIO()
    call_command(
        "create_expert_batch", "--release", str(expert_release), "--sample", "3", "--split", SPLIT, stdout=out
    )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["hits"] == 3
    assert Batch.objects.get(pk=summary["batch"]).hits.count() == 3
    with pytest.raises(CommandError, match="not a release"):
        call_command("create_expert_batch", "--release", str(expert_release.parent), stdout=StringIO())


@pytest.mark.django_db
def test_expert_page__type_first_then_answer_stored_once(client: Any, expert_release: Path) -> None:
    release = register_release(expert_release)
    batch = create_expert_batch(release, 1, seed=hidden_answer_seed(expert_release), split=SPLIT)
    assert isinstance(handler_for(batch.kind), ExpertAnswerHandler)
    worker = Worker.objects.get_or_create_for("local", "expert-1")
    assignment = claim_next(batch, worker)
    url = hit_links.url_for(assignment)
    pair = assignment.hit.qa_pair

    consent = client.get(url).content.decode()  # the expert's own task and time, not the writers' 14 pairs
    low, high = typical_minutes(batch.kind)
    assert (low, high) == CONSENT.typical_minutes and high < 60
    assert "you read one question a student asked" in consent and "choose the question&#39;s type" in consent
    assert f"usually takes {low} to {high} minutes" in consent and "14 questions" not in consent
    assert f"You have {batch.time_limit_minutes} minutes" in consent
    Consent.objects.create(worker=worker, batch=batch)

    page = client.get(url)
    assert page.status_code == 200
    body = page.content.decode()
    assert escape(pair.question) in body
    assert escape(pair.answer.strip()) not in body  # the expert never sees the crowd's answer
    assert body.count('name="question_type"') == len(qt.SYLLABUS_TYPES)
    assert len(page.context["pages"]) == pair.document.num_pages and page.context["has_pdf"]

    typed = "The final exam counts 30% & covers <all> units"
    invalid = client.post(url, {"answer": typed})
    assert invalid.status_code == 200
    assert set(invalid.context["errors"]) == {"question_type"}
    assert escape(typed) in invalid.content.decode()
    assert Assignment.objects.get(pk=assignment.pk).draft == {"answer": typed}
    no_answer = client.post(url, {"question_type": qt.SINGLE_FACTUAL, "answer": "  "})
    assert set(no_answer.context["errors"]) == {"answer"}
    assert re.search(r'value="single factual"[^>]* checked>', no_answer.content.decode())
    assert not ExpertAnswer.objects.exists()

    done = client.post(url, {"question_type": qt.SINGLE_FACTUAL, "answer": typed})
    assert "Your answers are saved" in done.content.decode()
    stored = ExpertAnswer.objects.get()
    assert (stored.qa_pair_id, stored.question_type, stored.answer) == (pair.pk, qt.SINGLE_FACTUAL, typed)
    assert stored.assignment.status == Assignment.Status.SUBMITTED
    client.post(url, {"question_type": qt.YES_NO, "answer": "Yes"})
    assert ExpertAnswer.objects.count() == 1


@pytest.mark.django_db
def test_check__no_answer_type_gets_the_fixed_text(expert_release: Path) -> None:
    release = register_release(expert_release)
    hit = create_expert_batch(release, 1, split=SPLIT).hits.get()
    handler = ExpertAnswerHandler()
    empty = handler.check(hit, None, {"question_type": qt.NO_ANSWER, "answer": ""})  # type: ignore[arg-type]
    assert empty.ok and empty.cleaned.answer == qt.NO_ANSWER_TEXT
    other = handler.check(hit, None, {"question_type": qt.NO_ANSWER, "answer": "Ask the TA"})  # type: ignore[arg-type]
    assert set(other.errors) == {"answer"}
    # Any type may be answered "No/insufficient information" (the expert finds the syllabus silent).
    allowed = handler.check(hit, None, {"question_type": qt.YES_NO, "answer": qt.NO_ANSWER_TEXT})  # type: ignore[arg-type]
    assert allowed.ok
    unknown = handler.check(hit, None, {"question_type": "sciq", "answer": "x"})  # type: ignore[arg-type]
    assert "Unknown question type" in unknown.errors["question_type"][0]


@pytest.mark.django_db
def test_expert_kind__not_a_plain_batch_and_no_qc_rerun(expert_release: Path) -> None:
    """Expert batches come only from a release; their submissions do not re-run QC on the crowd pair."""
    from annotation.services.batches import BatchSpec, BatchSpecError, create_batch
    from crowd.followup_tasks import after_submission

    with pytest.raises(BatchSpecError, match="create_expert_batch"):
        create_batch(BatchSpec(kind=Batch.Kind.EXPERT_ANSWER, corpus=CORPUS))
    with pytest.raises(CommandError, match="invalid choice: 'expert_answer'"):
        call_command("launch_batch", "--kind", "expert_answer", "--corpus", CORPUS)
    batch = create_expert_batch(register_release(expert_release), 1, split=SPLIT)
    assignment = claim_next(batch, Worker.objects.get_or_create_for("local", "expert-2"))
    assert after_submission(assignment.pk) == {"assignment": assignment.pk, "pairs": 0, "flagged": 0}
