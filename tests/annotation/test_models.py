"""Model behaviour: the assignment and batch status machines, page lookup, the answer source, pseudonyms."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.utils import timezone

from annotation.models import HIT, Assignment, Batch, IllegalTransition, QAPair
from crowd.models import Worker, pseudonym_for
from tests.factories import make_assignment, make_batch, make_corpus, make_document, make_worker

pytestmark = pytest.mark.django_db


class TestAssignmentStatus:
    def test_submit__records_answers_and_time_on_task(self) -> None:
        assignment = make_assignment()
        assignment.submit({"question": "Q?"}, now=assignment.accepted_at + timedelta(seconds=90))
        assignment.refresh_from_db()
        assert assignment.status == Assignment.Status.SUBMITTED
        assert assignment.answers == {"question": "Q?"}
        assert assignment.time_on_task_seconds == pytest.approx(90)

    def test_submit__a_stale_copy_loses_to_the_stored_status(self) -> None:
        """Two copies of one accepted assignment (two requests): the second submit changes nothing."""
        assignment = make_assignment()
        stale = Assignment.objects.get(pk=assignment.pk)
        assignment.submit({"question": "First?"})
        with pytest.raises(IllegalTransition, match="cannot go from 'submitted' to 'submitted'"):
            stale.submit({"question": "Second?"})
        assert stale.status == Assignment.Status.SUBMITTED  # refreshed from the row
        assert Assignment.objects.get(pk=assignment.pk).answers == {"question": "First?"}

    def test_submit__after_the_expiry_job_won_the_race_is_refused(self) -> None:
        assignment = make_assignment(expires_at=timezone.now() - timedelta(seconds=1))
        Assignment.objects.get(pk=assignment.pk).expire()  # the periodic job, from its own copy
        with pytest.raises(IllegalTransition):
            assignment.submit({"question": "Late?"})
        stored = Assignment.objects.get(pk=assignment.pk)
        assert (stored.status, stored.answers, stored.submitted_at) == ("expired", {}, None)

    @pytest.mark.parametrize(
        "path",
        [
            ["approve"],
            ["submit", "expire"],
            ["submit", "return_"],
            ["expire", "submit"],
            ["submit", "approve", "reject"],
            ["return_", "expire"],
        ],
    )
    def test_illegal_transitions__refused(self, path: list[str]) -> None:
        assignment = make_assignment()
        *legal, illegal = path
        for step in legal:
            getattr(assignment, step)(*(({},) if step == "submit" else ()))
        before = assignment.status
        with pytest.raises(
            IllegalTransition, match=f"Assignment\\({assignment.pk}\\) cannot go from '{before}'"
        ):
            args = {"submit": ({},), "reject": ("bad",)}.get(illegal, ())
            getattr(assignment, illegal)(*args)
        assignment.refresh_from_db()
        assert assignment.status == before

    def test_reject__needs_a_reason(self) -> None:
        assignment = make_assignment()
        assignment.submit({})
        with pytest.raises(ValidationError):
            assignment.reject("   ")
        assignment.reject("Spans were not copied from the syllabus.")
        assert assignment.status == Assignment.Status.REJECTED
        assignment.approve()  # reversing a rejection is allowed
        assert assignment.status == Assignment.Status.APPROVED

    def test_save_draft__only_while_accepted(self) -> None:
        assignment = make_assignment()
        assignment.save_draft({"qa-0-question": "draft"})
        assert Assignment.objects.get(pk=assignment.pk).draft == {"qa-0-question": "draft"}
        assignment.submit({})
        with pytest.raises(IllegalTransition):
            assignment.save_draft({})

    def test_expire_all_overdue__only_past_deadline(self) -> None:
        batch = make_batch()
        past = make_assignment(
            batch=batch, worker=make_worker("a"), expires_at=timezone.now() - timedelta(minutes=1)
        )
        future = make_assignment(
            batch=batch, worker=make_worker("b"), expires_at=timezone.now() + timedelta(minutes=5)
        )
        assert Assignment.expire_all_overdue() == 1
        past.refresh_from_db()
        future.refresh_from_db()
        assert (past.status, future.status) == ("expired", "accepted")

    def test_one_assignment_per_worker_per_hit(self) -> None:
        assignment = make_assignment()
        with pytest.raises(IntegrityError):
            Assignment.objects.create(hit=assignment.hit, worker=assignment.worker)


class TestHitCompletion:
    def test_complete_if_done__only_when_every_slot_holds_submitted_work(self) -> None:
        batch = make_batch()
        hit = HIT.objects.create(batch=batch, position=0, max_assignments=2)
        first = make_assignment(batch=batch, hit=hit, worker=make_worker("w1"))
        make_assignment(batch=batch, hit=hit, worker=make_worker("w2")).return_()
        make_assignment(batch=batch, hit=hit, worker=make_worker("w3"), status=Assignment.Status.EXPIRED)
        open_one = make_assignment(batch=batch, hit=hit, worker=make_worker("w4"))
        first.submit({"question": "Q?"})
        assert hit.complete_if_done() is False
        assert HIT.objects.get(pk=hit.pk).status == HIT.Status.OPEN
        open_one.submit({"question": "Q2?"})
        assert hit.complete_if_done() is True
        assert hit.status == HIT.objects.get(pk=hit.pk).status == HIT.Status.COMPLETED
        assert hit.complete_if_done() is False


class TestBatchStatus:
    def test_life_cycle(self) -> None:
        batch = make_batch()
        batch.publish()
        batch.pause()
        batch.publish()
        batch.complete()
        assert batch.status == Batch.Status.COMPLETED and batch.closed_at is not None
        with pytest.raises(IllegalTransition):
            batch.publish()


def test_document_page_of__and_bounds() -> None:
    document = make_document(text="aaaa\nbbbb\ncccc", page_starts=[0, 5, 10])
    assert [document.page_of(i) for i in (0, 4, 5, 13)] == [1, 1, 2, 3]
    assert document.page_text(2) == "bbbb\n"
    with pytest.raises(ValueError, match="has no page 4"):
        document.page_bounds(4)


@pytest.mark.parametrize(
    ("question_type", "source"),
    [
        ("yes/no", "explicit"),
        ("multi reasoning", "implicit"),
        ("no answer", "insufficient"),
        ("summarization", "implicit"),
    ],
)
def test_qapair_answer_source__generated_from_type(question_type: str, source: str) -> None:
    qa = QAPair.objects.create(corpus=make_corpus(), question_type=question_type, question="Q?")
    qa.refresh_from_db()
    assert qa.answer_source == source


def test_qapair__unknown_type_refused_by_database() -> None:
    with pytest.raises(IntegrityError):
        QAPair.objects.create(corpus=make_corpus(), question_type="trivia", question="Q?")


def test_worker_pseudonym__stable_salted_and_unique() -> None:
    worker = make_worker("A1B2C3D4E5F6G7", platform="mturk")
    again = Worker.objects.get_or_create_for("mturk", "A1B2C3D4E5F6G7")
    assert worker.pk == again.pk
    assert worker.pseudonym == pseudonym_for("mturk", "A1B2C3D4E5F6G7")
    assert "A1B2C3" not in worker.pseudonym
    assert pseudonym_for("mturk", "x", salt="s1" * 8) != pseudonym_for("mturk", "x", salt="s2" * 8)
