"""The SciQ HIT pages through Django's test client, on real SciQ passages (annotation/hits/sciq_*.py).

Stage 1: three passages, one question (or a rejection of all three); stage 2: validation, suggestions
and own distractors. Every invalid post must keep every field and say what is wrong next to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.db.transaction import TransactionManagementError
from django.test import Client

from annotation import sql_writes
from annotation.hits.sciq_question import PassageTaken, SciQQuestionHandler
from annotation.importers.mcq import MCQRow, read_sciq
from annotation.models import (
    HIT,
    Assignment,
    Batch,
    Corpus,
    Distractor,
    IllegalTransition,
    Passage,
    QAPair,
    Validation,
    sha256_text,
)
from annotation.qc.sciq import SciQItem, SciQOptions, check_item
from annotation.services.batches import BatchSpec, BatchSpecError, create_batch, passages_free_for_hits
from crowd.followup_tasks import after_submission
from crowd.models import Consent, Worker
from crowd.services import local_review as review
from tests.factories import make_researcher, make_worker
from worker import hit_links
from worker.assigning import ClaimRefused, claim_next

pytestmark = pytest.mark.django_db

CORPUS = "sciq"


def usable_records(root: Path, count: int) -> list[MCQRow]:
    """The first ``count`` SciQ validation records with a short passage and a question that passes QC.

    Their passages become the HIT passages; their real question and answer are what the test workers
    write, so every stage works on real data.
    """
    chosen = []
    for record in read_sciq(root, splits=("val",)):
        if not 25 <= len(record.passage.split()) <= 110:
            continue
        item = SciQItem(record.id, record.question, record.answer, passage=record.passage)
        if check_item(item, SciQOptions(check_distractors=False)).flags:
            continue
        chosen.append(record)
        if len(chosen) == count:
            break
    return chosen


def load_passages(root: Path, count: int) -> dict[str, MCQRow]:
    """Accepted passages in corpus ``sciq``; returns passage text -> its SciQ record."""
    records = usable_records(root, count)
    corpus = Corpus.objects.create(name=CORPUS, kind=Corpus.Kind.TEXTBOOK)
    for i, record in enumerate(records):
        Passage.objects.create(
            corpus=corpus,
            position=i,
            text=record.passage,
            text_sha256=sha256_text(record.passage),
            filter_status=Passage.FilterStatus.ACCEPTED,
        )
    return {r.passage: r for r in records}


@pytest.fixture
def records(shared_data: Callable[[str], Path]) -> dict[str, MCQRow]:
    """Twelve real SciQ passages, accepted by the filter and unused."""
    return load_passages(shared_data("sciq"), 12)


def _stage1(limit: int = 3) -> Batch:
    batch = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS, limit=limit))
    batch.publish()
    return batch


def _open(batch: Batch, worker: Worker) -> tuple[Assignment, str]:
    """Claim the next HIT for ``worker`` (consent given) and return it with its page path."""
    assignment = claim_next(batch, worker)
    Consent.objects.get_or_create(worker=worker, batch=batch)
    return assignment, hit_links.url_for(assignment)


def _first_passage(assignment: Assignment) -> Passage:
    return assignment.hit.passages.order_by("pk").first()


def _write_question(
    client: Client, batch: Batch, worker: Worker, records: dict[str, MCQRow], question: str = ""
) -> QAPair:
    """Worker writes the real SciQ question of the first passage of their HIT (or ``question``)."""
    assignment, url = _open(batch, worker)
    passage = _first_passage(assignment)
    record = records[passage.text]
    response = client.post(
        url, {"passage": str(passage.pk), "question": question or record.question, "answer": record.answer}
    )
    assert response.status_code == 200, response.content[:500]
    assert b"Thank you" in response.content, response.content.decode()[:2000]
    return QAPair.objects.get(assignment=assignment)


def _approve_into_stage2(pair: QAPair, capture: Any) -> HIT:
    with capture(execute=True):
        review.approve(pair.assignment)
    return HIT.objects.get(qa_pair=pair, batch__kind=Batch.Kind.SCIQ_DISTRACTOR)


def test_question_page__shows_the_three_passages_with_counters(client: Client, records: dict) -> None:
    batch = _stage1()
    assignment, url = _open(batch, make_worker("a"))
    html = client.get(url).content.decode()
    passages = list(assignment.hit.passages.order_by("pk"))
    assert len(passages) == 3
    for p in passages:
        assert f'name="passage" value="{p.pk}"' in html
        assert p.text[:40] in html
    assert 'value="none"' in html and "None of these passages is suitable" in html
    assert 'id="question-count"' in html and 'id="answer-count"' in html
    assert '<fieldset class="task-fields" >' in html  # not disabled for the worker


def test_question_page_and_submit__few_statements_each(
    client: Client,
    records: dict,
    django_assert_max_num_queries: Any,
    eager_celery: None,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The page reads the assignment (with consent) and the passages; the submit adds one transaction:
    the submit's conditional UPDATE, the pair, the passage taken by a conditional update. The HIT is
    completed by the follow-up job that runs once the submission is committed."""
    batch = _stage1()
    assignment, url = _open(batch, make_worker("a"))
    with django_assert_max_num_queries(2):
        assert client.get(url).status_code == 200
    passage = _first_passage(assignment)
    record = records[passage.text]
    fields = {"passage": str(passage.pk), "question": record.question, "answer": record.answer}
    with django_capture_on_commit_callbacks(execute=True):
        with django_assert_max_num_queries(8):
            response = client.post(url, fields)
        assert b"Thank you" in response.content
        assert Passage.objects.get(pk=passage.pk).used_by == QAPair.objects.get(assignment=assignment)
        assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.OPEN  # not waited for
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED


def test_question_preview__is_read_only(client: Client, records: dict) -> None:
    batch = _stage1()
    staff = make_researcher("researcher")
    client.force_login(staff)
    html = client.get(f"/hit/preview/{batch.hits.first().pk}/").content.decode()
    assert 'class="task-fields" disabled' in html
    assert "Preview: this is what the task looks like" in html
    assert "data-draft-url" not in html


def test_claims__two_workers_get_disjoint_passages(records: dict) -> None:
    batch = _stage1()
    first = claim_next(batch, make_worker("a"))
    second = claim_next(batch, make_worker("b"))
    a = set(first.hit.passages.values_list("pk", flat=True))
    b = set(second.hit.passages.values_list("pk", flat=True))
    assert len(a) == len(b) == 3 and not a & b


def test_new_batch__passages_open_hits_show_stay_out_until_those_hits_or_batches_close(records: dict) -> None:
    """A passage shown by an open HIT of a live batch is not free; one whose HIT completed, or whose
    batch was cancelled, is free again (not used up: nobody wrote about it)."""
    corpus = Corpus.objects.get(name=CORPUS)
    first = _stage1(limit=2)
    shown = {hit.pk: set(hit.passages.values_list("pk", flat=True)) for hit in first.hits.all()}
    every = set(corpus.passages.values_list("pk", flat=True))
    assert set(passages_free_for_hits(corpus).values_list("pk", flat=True)) == every - set().union(
        *shown.values()
    )
    second = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS))
    assert second.hits.count() == 2
    assert not set(second.hits.values_list("passages", flat=True)) & set().union(*shown.values())
    assert not passages_free_for_hits(corpus).exists()

    done, still_open = sorted(shown)
    HIT.objects.filter(pk=done).update(status=HIT.Status.COMPLETED)
    assert set(passages_free_for_hits(corpus).values_list("pk", flat=True)) == shown[done]
    Batch.objects.filter(pk=first.pk).update(status=Batch.Status.CANCELLED)
    assert set(passages_free_for_hits(corpus).values_list("pk", flat=True)) == shown[done] | shown[still_open]


def test_question_post__errors_keep_every_field(client: Client, records: dict) -> None:
    batch = _stage1()
    assignment, url = _open(batch, make_worker("a"))
    passage = _first_passage(assignment)
    question = "Is a frameshift mutation a change in the reading frame?"
    answer = "a change of the frame"
    html = client.post(
        url, {"passage": str(passage.pk), "question": question, "answer": answer}
    ).content.decode()
    assert "Please fix 2 problems" in html
    assert "Yes/no questions are not allowed" in html
    assert "answer has 5 words, at most 3" in html.lower()
    assert f">{question}</textarea>" in html
    assert f'value="{answer}"' in html
    assert f'value="{passage.pk}" checked' in html
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ACCEPTED
    assert assignment.draft == {"passage": str(passage.pk), "question": question, "answer": answer}
    assert not QAPair.objects.exists()


def test_question_post__no_passage_chosen_and_empty_fields(client: Client, records: dict) -> None:
    _, url = _open(_stage1(), make_worker("a"))
    html = client.post(url, {"question": "", "answer": ""}).content.decode()
    assert "Choose the passage your question is about" in html
    assert "Write a question about the passage you chose." in html
    assert "Write the answer" in html


def test_question_post__passage_of_another_hit_is_refused(client: Client, records: dict) -> None:
    batch = _stage1()
    mine, url = _open(batch, make_worker("a"))
    other = Passage.objects.exclude(hits=mine.hit).first()
    record = records[other.text]
    html = client.post(url, {"passage": str(other.pk), "question": record.question, "answer": record.answer})
    assert "is not one of this HIT&#39;s passages" in html.content.decode()
    assert not QAPair.objects.exists()


def test_question_post__answer_not_in_passage_warns_but_does_not_block(client: Client, records: dict) -> None:
    batch = _stage1()
    assignment, url = _open(batch, make_worker("a"))
    passage = _first_passage(assignment)
    record = records[passage.text]
    data = {"passage": str(passage.pk), "question": "Short question here?", "answer": "quasar"}
    html = client.post(url, data).content.decode()
    assert "does not occur in the passage" in html and 'class="field-warning"' in html
    client.post(url, {**data, "question": record.question})
    pair = QAPair.objects.get(assignment=assignment)
    assert pair.answer == "quasar" and "answer_not_in_passage" in pair.qc_flags


def test_question_qc_at_submit__equals_the_qc_the_job_would_run(client: Client, records: dict) -> None:
    """The handler says the page ran the whole QC (``qc_at_submit``), so the job skips it: the flags and
    normalized answers stored at submission must be exactly what the job's QC computes."""
    from annotation.qc.common import severities_of
    from filters.services import qc_queryset

    batch = _stage1(limit=3)
    pairs = [_write_question(client, batch, make_worker(f"w{i}"), records) for i in range(2)]
    assignment, url = _open(batch, make_worker("w-quasar"))
    passage = _first_passage(assignment)
    client.post(
        url, {"passage": str(passage.pk), "question": records[passage.text].question, "answer": " quasar "}
    )
    pairs.append(QAPair.objects.get(assignment=assignment))
    chosen = QAPair.objects.filter(pk__in=[p.pk for p in pairs])
    stored = [(p.qc_flags, p.qc_severity, p.normalized_answer) for p in chosen]
    rerun = qc_queryset(chosen, save=False)
    assert stored == [(list(r["flags"]), severities_of(r["issues"]), r["normalized_answer"]) for r in rerun]
    assert ["answer_not_in_passage"] in [flags for flags, _, _ in stored]  # a flag the job would also set


def test_question_post__valid_creates_pair_and_uses_up_the_passage(client: Client, records: dict) -> None:
    batch = _stage1()
    worker = make_worker("a")
    pair = _write_question(client, batch, worker, records)
    passage = pair.passage
    record = records[passage.text]
    assert (pair.question, pair.answer, pair.normalized_answer) == (
        record.question,
        record.answer,
        record.answer,
    )
    assert pair.question_type == "sciq" and pair.status == QAPair.Status.PENDING
    assert pair.corpus.name == CORPUS
    passage.refresh_from_db()
    assert passage.used_by_id == pair.pk
    assignment = pair.assignment
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.time_on_task_seconds is not None
    assert assignment.answers["passage"] == str(passage.pk)
    after_submission(assignment.pk)  # the follow-up job the submission queued
    assert HIT.objects.get(pk=assignment.hit_id).status == HIT.Status.COMPLETED
    # The HIT's two other passages return to the pool; the chosen one never does.
    later = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS))
    offered = set(Passage.objects.filter(hits__batch=later).values_list("pk", flat=True))
    assert offered and passage.pk not in offered


def test_question_post__none_suitable_stores_only_the_answers(client: Client, records: dict) -> None:
    batch = _stage1(limit=4)
    assignment, url = _open(batch, make_worker("a"))
    shown = sorted(assignment.hit.passages.values_list("pk", flat=True))
    response = client.post(
        url, {"passage": "none", "question": "", "answer": "", "reject_reason": "lists only"}
    )
    assert b"Thank you" in response.content
    after_submission(assignment.pk)  # the follow-up job the submission queued completes the HIT
    assignment.refresh_from_db()
    assert assignment.answers["passage"] == "none" and assignment.answers["reject_reason"] == "lists only"
    assert assignment.answers["rejected_passages"] == shown
    assert not QAPair.objects.exists()
    assert not Passage.objects.filter(pk__in=shown, used_by__isnull=False).exists()
    assert set(Passage.objects.filter(pk__in=shown).values_list("crowd_rejections", flat=True)) == {1}
    # All 12 passages were in the batch's 4 HITs; the rejected three are free again once their HIT is done.
    later = create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS))
    assert [sorted(h.passages.values_list("pk", flat=True)) for h in later.hits.all()] == [shown]
    # A second worker rejects them too: they are retired, never offered again.
    later.publish()
    second, url2 = _open(later, make_worker("b"))
    client.post(url2, {"passage": "none", "question": "", "answer": ""})
    assert set(Passage.objects.filter(pk__in=shown).values_list("crowd_rejections", flat=True)) == {2}
    with pytest.raises(BatchSpecError):
        create_batch(BatchSpec(kind="sciq_question", corpus=CORPUS))


def test_question_store__passage_used_meanwhile_raises(records: dict) -> None:
    batch = _stage1()
    assignment = claim_next(batch, make_worker("a"))
    passage = _first_passage(assignment)
    record = records[passage.text]
    handler = SciQQuestionHandler()
    fields = {"passage": str(passage.pk), "question": record.question, "answer": record.answer}
    check = handler.check(assignment.hit, assignment, fields)
    assert check.ok
    other = QAPair.objects.create(corpus=passage.corpus, question_type="sciq", question="q", answer="a")
    Passage.objects.filter(pk=passage.pk).update(used_by=other)
    with pytest.raises(PassageTaken, match="Someone else has just written a question about this passage"):
        handler.store(assignment, check)
    assert (
        "Another worker has just written"
        in handler.check(assignment.hit, assignment, fields).errors["passage"][0]
    )


def _checked_question(records: dict) -> tuple[Assignment, Passage, SciQQuestionHandler, Any]:
    """A claimed stage-1 assignment (vouched: the local crowd), a valid question about its first passage."""
    assignment = claim_next(_stage1(), make_worker("a"))
    passage = _first_passage(assignment)
    record = records[passage.text]
    handler = SciQQuestionHandler()
    fields = {"passage": str(passage.pk), "question": record.question, "answer": record.answer}
    check = handler.check(assignment.hit, assignment, fields)
    assert check.ok and assignment.vouched
    return assignment, passage, handler, check


def test_question_submit__stores_the_pair_and_takes_its_passage(records: dict) -> None:
    """The submit's UPDATE, the pair's INSERT and the passage's take, sent together, store what the
    three statements stored one by one."""
    assignment, passage, handler, check = _checked_question(records)
    with transaction.atomic():
        handler.submit(assignment, check, active=("p1", 4000))
    stored = Assignment.objects.get(pk=assignment.pk)
    assert stored.status == Assignment.Status.SUBMITTED and set(stored.active_pages) == {"p1"}
    pair = QAPair.objects.get(assignment=assignment)
    assert (pair.passage_id, pair.question, pair.status) == (
        passage.pk,
        check.cleaned.question,
        QAPair.Status.PENDING,
    )
    assert Passage.objects.get(pk=passage.pk).used_by_id == pair.pk


def test_question_submit__passage_used_meanwhile_rolls_back(records: dict) -> None:
    assignment, passage, handler, check = _checked_question(records)
    other = QAPair.objects.create(corpus=passage.corpus, question_type="sciq", question="q", answer="a")
    Passage.objects.filter(pk=passage.pk).update(used_by=other)
    with pytest.raises(PassageTaken), transaction.atomic():
        handler.submit(assignment, check)
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ACCEPTED
    assert not QAPair.objects.filter(assignment=assignment).exists()
    assert Passage.objects.get(pk=passage.pk).used_by_id == other.pk


def test_question_submit__a_refused_submit_keeps_no_pair(records: dict) -> None:
    """The pair goes to the database with the submit's UPDATE; when the UPDATE finds the assignment no
    longer accepted (an expiry or another submission won the race), the pair and the passage's take are
    rolled back, even where the caller catches the refusal inside its ``atomic`` block."""
    assignment, passage, handler, check = _checked_question(records)
    Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.EXPIRED)
    with pytest.raises(IllegalTransition), transaction.atomic():
        handler.submit(assignment, check)
    assert assignment.status == Assignment.Status.EXPIRED  # refreshed for the page that says so
    assert not QAPair.objects.filter(assignment=assignment).exists()
    assert Passage.objects.get(pk=passage.pk).used_by_id is None
    assignment.status = Assignment.Status.ACCEPTED
    with transaction.atomic():
        with contextlib.suppress(IllegalTransition):
            handler.submit(assignment, check)
    assert not QAPair.objects.filter(assignment=assignment).exists()
    assert Passage.objects.get(pk=passage.pk).used_by_id is None


@pytest.mark.django_db(transaction=True)
def test_question_submit__with_its_writes_only_inside_a_transaction(records: dict) -> None:
    """Outside an ``atomic`` block a refused submit could not take back the pair sent with it: refused."""
    assignment, _, _, check = _checked_question(records)
    pair = QAPair(corpus_id=assignment.hit.batch.corpus_id, question_type="sciq", question="q", answer="a")
    with pytest.raises(TransactionManagementError):
        assignment.submit(check.fields, then=[sql_writes.SqlInsert(QAPair).bind(pair)])
    assert not QAPair.objects.exists()
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.ACCEPTED


def test_approve__creates_stage2_hit_that_the_author_cannot_take(
    client: Client, records: dict, eager_celery: None, django_capture_on_commit_callbacks: Any
) -> None:
    batch = _stage1()
    author = make_worker("author")
    pair = _write_question(client, batch, author, records)
    hit = _approve_into_stage2(pair, django_capture_on_commit_callbacks)
    assert hit.batch.parent_id == batch.pk and hit.batch.status == Batch.Status.PUBLISHED
    suggestions = list(pair.distractors.filter(origin=Distractor.Origin.MODEL).order_by("model_rank"))
    assert len(suggestions) == 6
    assert {s.model_version for s in suggestions} == {"wordnet-sibling-fallback"}
    assert all(s.text.lower() != pair.answer.lower() for s in suggestions)
    with pytest.raises(ClaimRefused):
        claim_next(hit.batch, author)
    assert claim_next(hit.batch, make_worker("validator")).hit_id == hit.pk


@pytest.fixture
def stage2(
    client: Client, records: dict, eager_celery: None, django_capture_on_commit_callbacks: Any
) -> dict:
    """An approved stage-1 question whose question holds HTML, and its stage-2 page for a validator."""
    batch = _stage1()
    assignment = claim_next(batch, make_worker("author"))
    record = records[_first_passage(assignment).text]
    question = record.question.rstrip("?") + " <script>alert('x')</script> <b>now</b>?"
    pair = _write_question(client, batch, assignment.worker, records, question=question)
    hit = _approve_into_stage2(pair, django_capture_on_commit_callbacks)
    validation_assignment, url = _open(hit.batch, make_worker("validator"))
    return {
        "pair": pair,
        "assignment": validation_assignment,
        "url": url,
        "suggestions": list(pair.distractors.filter(origin=Distractor.Origin.MODEL).order_by("model_rank")),
    }


def test_distractor_page__escapes_worker_text_and_shows_six_suggestions(client: Client, stage2: dict) -> None:
    html = client.get(stage2["url"]).content.decode()
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &lt;b&gt;now&lt;/b&gt;?" in html
    assert "<script>alert" not in html and "<b>now</b>" not in html
    assert html.count('name="suggested"') == 6
    for s in stage2["suggestions"]:
        assert f'value="{s.pk}"' in html
    assert "<details" in html and stage2["pair"].passage.text[:40] in html
    for flag in ("ungrammatical", "false_answer", "unrelated", "too_specific"):
        assert f'name="flag" value="{flag}"' in html
    assert "made by a computer" in html and "wordnet-sibling-fallback" not in html  # no internal labels
    sources = {s.model_version for s in stage2["suggestions"]}
    assert sources and all(source and source not in html for source in sources)


def test_distractor_post__three_suggestions_and_no_own_keeps_fields(client: Client, stage2: dict) -> None:
    ids = [str(s.pk) for s in stage2["suggestions"][:3]]
    html = client.post(stage2["url"], {"flag": ["too_specific"], "suggested": ids}).content.decode()
    assert "You picked 3 suggestions; keep at most 2" in html
    assert "Write at least 1 wrong answer yourself (you wrote 0)" in html
    for i in ids:
        assert f'value="{i}" checked' in html
    assert 'value="too_specific" checked' in html
    assert not Validation.objects.exists()


def test_distractor_post__empty_form_says_each_problem_once(client: Client, stage2: dict) -> None:
    html = client.post(stage2["url"], {}).content.decode()
    assert html.count("Write 3 wrong answers yourself") == 1 and "Please fix 1 problem" in html


def test_distractor_post__own_equal_to_answer_and_duplicates(client: Client, stage2: dict) -> None:
    answer = stage2["pair"].answer
    kept = stage2["suggestions"][0]
    data = {"suggested": [str(kept.pk)], "own-0": f"  {answer.upper()} ", "own-1": kept.text, "own-2": ""}
    html = client.post(stage2["url"], data).content.decode()
    assert "is the correct answer; a wrong answer option must differ from it" in html
    assert f'value="  {answer.upper()} "' in html and f'value="{kept.text}"' in html
    assert f'value="{kept.pk}" checked' in html
    data = {"suggested": [str(kept.pk)], "own-0": "salt", "own-1": kept.text.upper()}
    html = client.post(stage2["url"], data).content.decode()
    assert "is already one of your wrong answers" in html
    assert not Validation.objects.exists()


def test_distractor_post__nothing_written_and_foreign_ids(client: Client, stage2: dict) -> None:
    html = client.post(stage2["url"], {"suggested": ["999999"], "flag": ["bogus"]}).content.decode()
    assert "Suggestion &#39;999999&#39; is not one of this question" in html
    assert "Unknown flag &#39;bogus&#39;" in html
    assert "Write 3 wrong answers yourself" in html


def test_distractor_post__valid_stores_validation_and_per_validation_rows(
    client: Client, stage2: dict
) -> None:
    kept = stage2["suggestions"][:2]
    data = {
        "flag": ["ungrammatical"],
        "suggested": [str(s.pk) for s in kept],
        "own-0": "ribosomes",
        "own-1": "",
    }
    response = client.post(stage2["url"], data)
    assert b"Thank you" in response.content
    assignment = stage2["assignment"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.time_on_task_seconds is not None
    validation = Validation.objects.get(assignment=assignment)
    assert validation.qa_pair == stage2["pair"] and validation.flags == ["ungrammatical"]
    rows = list(validation.distractors.order_by("position"))
    assert [(r.text, r.origin, r.selected) for r in rows] == [
        (kept[0].text, "model", True),
        (kept[1].text, "model", True),
        ("ribosomes", "worker", True),
    ]
    assert rows[0].model_rank == kept[0].model_rank and rows[0].model_version == "wordnet-sibling-fallback"
    offered = Distractor.objects.filter(qa_pair=stage2["pair"], origin="model", validation__isnull=True)
    assert offered.count() == 6 and not offered.filter(selected=True).exists()


def test_review_queue__shows_stage2_validations_and_approves_them(client: Client, stage2: dict) -> None:
    kept = stage2["suggestions"][:2]
    client.post(
        stage2["url"],
        {"flag": ["too_specific"], "suggested": [str(s.pk) for s in kept], "own-0": "ribosomes", "own-1": ""},
    )
    assignment = stage2["assignment"]
    client.force_login(make_researcher())
    page = client.get(f"/review/?batch={assignment.hit.batch_id}").content.decode()
    assert "1 submission: 0 QA pairs, 1 validation" in page
    item = page.split(f'id="submission-{assignment.pk}"')[1]
    assert "too_specific" in item and "ribosomes" in item and kept[0].text in item and kept[1].text in item
    assert f'name="assignment" value="{assignment.pk}"' in item
    assert (
        f"submission-{assignment.pk}"
        in client.get("/review/?type=validation&flag=too_specific").content.decode()
    )
    assert (
        f"submission-{assignment.pk}"
        not in client.get("/review/?type=validation&flag=unrelated").content.decode()
    )
    response = client.post(
        "/review/decide/", {"action": "approve", "assignment": [str(assignment.pk)]}, follow=True
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.APPROVED
    assert (
        f"Approved 1 submission ({assignment.pk}: recorded for the local worker" in response.content.decode()
    )
