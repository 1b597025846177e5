"""Gold and attention items inside a SciQ stage-2 batch, end to end on real SciQ questions.

The researcher attaches items with ``manage.py attach_gold`` (known verdicts and instructed-response items
drawn from SciQ's test split); real stage-2 HITs come from real SciQ validation questions as stage-1 work
is accepted, and the items are served among them. Simulated workers go through the real HIT pages: they
read the question and answer off the page and decide with SciQ's answer key, never with the item rows.
The after-submission job grades them; the batch page and the review queue show the result.
"""

from __future__ import annotations

import html as htmllib
import io
import json
import re
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation import question_types as qt
from annotation.importers.mcq import MCQRow, read_sciq
from annotation.models import (
    HIT,
    Assignment,
    Batch,
    Corpus,
    GoldItem,
    GoldStanding,
    Passage,
    QAPair,
    sha256_text,
)
from annotation.models.answers import Validation
from crowd.gold import ATTENTION_FLAG, ATTENTION_FLAG_LABEL
from crowd.models import Consent, Worker
from crowd.services.validation_hits import add_validation_hit, stage2_batch_for
from tests.factories import make_batch, make_researcher, make_worker
from worker import hit_links
from worker.assigning import ClaimRefused, claim_next

# The eager stage-2 submissions here are about gold and attention items, not the options-only check.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_options_only_check")]

REAL_QUESTIONS = 12
OWN_DISTRACTORS = ("granite pebbles", "sound waves", "iron filings", "table salt", "moonlight")


def _real_records(sciq: Path) -> list[MCQRow]:
    return [
        r for r in read_sciq(sciq, splits=("val",)) if r.passage.strip() and 3 <= len(r.question.split())
    ][:REAL_QUESTIONS]


def _stage2_with_items(sciq: Path, **extra: Any) -> tuple[Batch, dict[str, Any]]:
    """A published stage-1 batch, items attached through the command, then the real validation HITs."""
    corpus = Corpus.objects.create(name="sciq-written", kind=Corpus.Kind.TEXTBOOK)
    stage1 = make_batch(
        corpus, name="stage 1", kind=Batch.Kind.SCIQ_QUESTION, options={"stage2_assignments": 2}
    )
    stage1.publish()
    out = io.StringIO()
    args = {
        "batch": stage1.pk,
        "sciq": str(sciq),
        "gold_n": 8,
        "attention_n": 3,
        "bad_share": 0.5,
        "seed": 4,
        "gold_rate": 50,
        "attention_rate": 25,
        "warn_below": 80,
        "block_below": 60,
        "min_answers": 4,
        **extra,
    }
    call_command("attach_gold", stdout=out, **args)
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    writer = make_worker("writer")
    stage2 = stage2_batch_for(stage1)
    for position, record in enumerate(_real_records(sciq)):
        hit1 = HIT.objects.create(batch=stage1, position=position)
        written = Assignment.objects.create(hit=hit1, worker=writer, status=Assignment.Status.APPROVED)
        passage = Passage.objects.create(
            corpus=corpus, position=position, text=record.passage, text_sha256=sha256_text(record.passage)
        )
        pair = QAPair.objects.create(
            corpus=corpus,
            passage=passage,
            assignment=written,
            question_type=qt.SCIQ,
            question=record.question,
            answer=record.answer,
            normalized_answer=record.answer,
            status=QAPair.Status.ACCEPTED,
        )
        add_validation_hit(stage2, pair)
    stage2.refresh_from_db()
    return stage2, summary


def _shown(page: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}">(.*?)</p>', page, re.S)
    assert found, f"no #{element_id} on the page"
    return htmllib.unescape(found.group(1)).strip()


def _answer(page: str, key: dict[str, MCQRow], careful: bool, attentive: bool) -> dict[str, Any]:
    """What a worker posts: the verdict from the page and the answer key, kept suggestions and own ones."""
    question, answer = _shown(page, "qa-question"), _shown(page, "qa-answer")
    if "tick only the box" in question:
        flags = [ATTENTION_FLAG] if attentive else []
    else:
        record = key[question]
        fine = answer == record.answer
        flags = [] if fine == careful else ["false_answer"]
    suggestions = re.findall(r'name="suggested" value="(\d+)"', page)[:2]
    texts = {
        htmllib.unescape(t).casefold()
        for t in re.findall(r'<label class="suggestion">.*?<span>(.*?)</span>', page, re.S)
    }
    own = [d for d in OWN_DISTRACTORS if d.casefold() not in texts and d.casefold() != answer.casefold()]
    fields: dict[str, Any] = {"flag": flags, "suggested": suggestions}
    for k, text in enumerate(own[: 3 - len(suggestions)]):
        fields[f"own-{k}"] = text
    return fields


def _work(
    client: Client,
    batch: Batch,
    worker: Worker,
    key: dict[str, MCQRow],
    careful: bool,
    attentive: bool,
    capture: Any,
) -> list[str]:
    """The worker takes HITs until none is left or they are refused; returns each HIT's item kind."""
    done = []
    while True:
        worker.refresh_from_db()  # each request reads the worker afresh
        try:
            assignment = claim_next(batch, worker)
        except ClaimRefused:
            return done
        Consent.objects.get_or_create(worker=worker, batch=batch)
        url = hit_links.url_for(assignment)
        page = client.get(url).content.decode()
        with capture(execute=True):
            response = client.post(url, _answer(page, key, careful, attentive))
        assert b"Thank you" in response.content, response.content.decode()[:3000]
        item = GoldItem.objects.filter(hit=assignment.hit_id).first()
        done.append(item.kind if item else "real")


def test_attach_gold__items_are_served_among_the_real_hits(sciq: Path) -> None:
    stage2, summary = _stage2_with_items(sciq)
    assert summary["attached"] == 11 and summary["served"] == 0  # no real HIT yet to hide them among
    assert summary["options"]["gold_block_below"] == 60 and stage2.options["gold_rate"] == 50
    hits = list(stage2.hits.order_by("position").select_related("gold_item"))
    kinds = [getattr(h, "gold_item", None) and h.gold_item.kind for h in hits]
    assert kinds.count(None) == REAL_QUESTIONS
    assert kinds.count(GoldItem.Kind.GOLD) == 6 and kinds.count(GoldItem.Kind.ATTENTION) == 3  # 50% and 25%
    assert kinds[0] is None and kinds[1] == GoldItem.Kind.GOLD  # spread through the batch, not at its end
    assert {h.max_assignments for h in hits} == {2}
    gold_pairs = QAPair.objects.filter(gold_item__batch=stage2)
    assert {p.corpus.name for p in gold_pairs} == {"crowdqa-gold"}
    assert all(p.distractors.filter(validation__isnull=True).count() == 6 for p in gold_pairs)
    # Running the command again adds nothing twice.
    out = io.StringIO()
    call_command(
        "attach_gold",
        stdout=out,
        batch=stage2.pk,
        sciq=str(sciq),
        gold_n=8,
        attention_n=3,
        bad_share=0.5,
        seed=4,
    )
    assert json.loads(out.getvalue().splitlines()[-1])["skipped"] == 11


class _Skeleton(HTMLParser):
    """Tags with their attributes, text and the values that name this HIT's material left out."""

    VARYING = {"value", "href", "action", "data-draft-url", "data-active-url", "src"}

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, tuple[tuple[str, str], ...]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kept = tuple(sorted((k, v or "") for k, v in attrs if k not in self.VARYING))
        self.tags.append((tag, kept))


def _skeleton(page: str) -> list[tuple[str, tuple[tuple[str, str], ...]]]:
    parser = _Skeleton()
    parser.feed(page)
    return parser.tags


def test_gold_page__cannot_be_told_from_a_real_one(client: Client, sciq: Path) -> None:
    stage2, _ = _stage2_with_items(sciq)
    worker = make_worker("looker")
    expires = timezone.now() + timedelta(hours=1)
    pages = {}
    for kind in (GoldItem.Kind.GOLD, GoldItem.Kind.ATTENTION, None):
        hit = stage2.hits.filter(gold_item__kind=kind) if kind else stage2.hits.filter(gold_item__isnull=True)
        assignment = Assignment.objects.create(
            hit=hit.order_by("position").first(),
            worker=worker,
            expires_at=expires,
        )
        Consent.objects.get_or_create(worker=worker, batch=stage2)
        pages[kind] = client.get(hit_links.url_for(assignment)).content.decode()
    for kind in (GoldItem.Kind.GOLD, GoldItem.Kind.ATTENTION):
        assert _skeleton(pages[kind]) == _skeleton(pages[None])
        for word in ("gold", "attention", "known"):
            assert not re.search(rf'(class|id|name|data-[\w-]+)="[^"]*{word}', pages[kind], re.I)
    assert ATTENTION_FLAG_LABEL in pages[GoldItem.Kind.ATTENTION]  # the instruction names a real choice
    assert dict(Validation.Flag.choices)[ATTENTION_FLAG] == ATTENTION_FLAG_LABEL


def test_gold__wrong_worker_blocked_at_the_threshold_good_worker_kept(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stage2, _ = _stage2_with_items(sciq)
    good, wrong = make_worker("good"), make_worker("wrong")
    done_good = _work(
        client, stage2, good, key, careful=True, attentive=True, capture=django_capture_on_commit_callbacks
    )
    done_wrong = _work(
        client, stage2, wrong, key, careful=False, attentive=True, capture=django_capture_on_commit_callbacks
    )

    assert len(done_good) == stage2.hits.count()  # did every HIT, never refused
    good.refresh_from_db()
    record = GoldStanding.objects.get(batch=stage2, worker=good)
    assert not good.blocked and record.state == GoldStanding.State.OK
    assert (record.gold_n, record.gold_correct, record.attention_failed) == (6, 6, 0)

    wrong.refresh_from_db()
    record = GoldStanding.objects.get(batch=stage2, worker=wrong)
    assert wrong.blocked and record.state == GoldStanding.State.BLOCKED
    assert done_wrong.count(GoldItem.Kind.GOLD) == 4  # blocked at the 4th gold answer (--min-answers 4)
    assert record.gold_n == 4 and record.gold_correct == 0
    assert "gold accuracy 0% (0/4)" in wrong.block_reason and f"Batch({stage2.pk})" in wrong.block_reason
    assert len(done_wrong) < len(done_good)

    # The batch page shows gold accuracy and attention per worker, and the flag.
    client.force_login(make_researcher())
    page = client.get(reverse("annotation:batch", args=[stage2.pk])).content.decode()
    assert "quality check: blocked" in page
    assert re.search(r'gold-cell">100% <span class="muted small">\(6\)', page)
    assert re.search(r'gold-cell">0% <span class="muted small">\(4\)', page)
    assert re.search(r'attention-cell">0 / 3<', page)
    assert "and 6 gold items" in page
    assert "6 of 8 gold items served (50 per 100 HITs), 3 of 3 attention items (25 per 100 HITs)" in page
    assert "flagged under 80% gold accuracy, blocked under 60%, after 4 gold answers" in page
    queue = client.get(
        reverse("annotation:review-queue"), {"batch": stage2.pk, "worker": wrong.pseudonym}
    ).content.decode()
    assert "quality check: blocked" in queue and "gold item failed" in queue


def test_attention__one_failure_warns_two_block(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stage2, _ = _stage2_with_items(sciq)
    sloppy = make_worker("sloppy")
    done = _work(
        client, stage2, sloppy, key, careful=True, attentive=False, capture=django_capture_on_commit_callbacks
    )
    assert done.count(GoldItem.Kind.ATTENTION) == 2  # stopped at the second failure (Prolific's rule)
    sloppy.refresh_from_db()
    record = GoldStanding.objects.get(batch=stage2, worker=sloppy)
    assert sloppy.blocked and record.state == GoldStanding.State.BLOCKED and record.attention_failed == 2
    assert record.gold_correct == record.gold_n  # right on every gold item: blocked for attention only


def test_aggregation__uses_the_stored_gold(
    client: Client,
    sciq: Path,
    key: dict[str, MCQRow],
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stage2, _ = _stage2_with_items(sciq, block_below=None, warn_below=None)
    for name in ("a", "b"):
        _work(
            client,
            stage2,
            make_worker(name),
            key,
            careful=True,
            attentive=True,
            capture=django_capture_on_commit_callbacks,
        )
    out = io.StringIO()
    call_command("aggregate_judgements", batch=stage2.parent_id, json=True, stdout=out)
    result = json.loads(out.getvalue().splitlines()[-1])
    workers = result["workers"]
    assert {w["gold_n"] for w in workers.values()} == {6} and {
        w["gold_accuracy"] for w in workers.values()
    } == {1.0}
    assert len(result["items"]) == REAL_QUESTIONS + 6  # the attention answers are no judgements


def test_launch_batch__gold_settings_reach_the_validation_batch(sciq_corpus: Corpus) -> None:
    out = io.StringIO()
    call_command(
        "launch_batch",
        *("--kind", "sciq_question", "--corpus", sciq_corpus.name, "--validators", "3"),
        *(
            "--gold-rate",
            "10",
            "--attention-rate",
            "5",
            "--gold-warn-below",
            "85",
            "--gold-block-below",
            "70",
        ),
        *("--gold-min-answers", "6", "--attention-block", "2"),
        stdout=out,
    )
    stage1 = Batch.objects.get(pk=json.loads(out.getvalue().splitlines()[-1])["batch"])
    expected = {
        "gold_rate": 10.0,
        "attention_rate": 5.0,
        "gold_warn_below": 85.0,
        "gold_block_below": 70.0,
        "gold_min_answers": 6,
        "attention_block_failures": 2,
    }
    assert {k: stage1.options[k] for k in expected} == expected
    stage2 = stage2_batch_for(stage1)
    assert {k: stage2.options[k] for k in expected} == expected and stage2.assignments_per_hit == 3
    with pytest.raises(CommandError, match="serves no gold or attention items"):
        call_command("launch_batch", "--kind", "screening", "--corpus", sciq_corpus.name, "--gold-rate", "10")
    with pytest.raises(CommandError, match="--gold-block-below must be 0 to 100"):
        call_command(
            "launch_batch",
            "--kind",
            "sciq_question",
            "--corpus",
            sciq_corpus.name,
            "--gold-block-below",
            "120",
        )


def test_new_batch_form__gold_settings_become_batch_options(sciq_corpus: Corpus) -> None:
    from console.batch_form import NewBatchForm

    data = {
        "kind": "sciq_question",
        "provider": "local",
        "corpus": sciq_corpus.name,
        "assignments": 1,
        "time_limit": 60,
        "reward": "0.10",
        "gold_rate": "10",
        "gold_block_below": "60",
        "attention_block_failures": "2",
    }
    form = NewBatchForm(data=data)
    assert form.is_valid(), form.errors
    options = form.spec({}).options
    assert options == {"gold_rate": 10.0, "gold_block_below": 60.0, "attention_block_failures": 2}
    bad = NewBatchForm(data={**data, "gold_block_below": "120"})
    assert not bad.is_valid() and "gold_block_below" in bad.errors
    assert (
        "gold_rate" in NewBatchForm().field_kinds()
        and "syllabus_qa" not in NewBatchForm().field_kinds()["gold_rate"]
    )
