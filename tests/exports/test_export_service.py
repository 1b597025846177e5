"""The export service and job: refusals (empty split, short split, leakage), failures stored on the job,
safe retries, the command's exit codes and the card's title."""

from __future__ import annotations

import json
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation import question_types as qt
from annotation.models import Corpus, Job, QAPair
from exports.models import Release
from exports.services import exporting
from exports.services.exporting import ExportRequest, ExportRequestError, run_export, start_export
from exports.tasks import ExportFailed, export_release
from tests.factories import make_corpus, make_document, make_textbook

pytestmark = pytest.mark.django_db


def _corpus(documents: int, per_document: int, name: str = "syl") -> Corpus:
    """A syllabus corpus: ``documents`` syllabi with ``per_document`` distinct QA pairs each."""
    corpus = make_corpus(name=name)
    for d in range(documents):
        doc = make_document(corpus, name=f"syllabus-{d}", text=f"Course {d}. Office hours on day {d}.")
        for i in range(per_document):
            QAPair.objects.create(
                corpus=corpus,
                document=doc,
                question_type=qt.SYLLABUS_TYPES[0],
                question=f"When are office hours of course {d}, question {i}?",
                answer=f"Day {d}",
            )
    return corpus


def _export(*args: str) -> dict:
    out = StringIO()
    call_command("export_release", "--sync", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _base(tmp_path: Path, version: str = "1.0") -> list[str]:
    return ["--name", "syl", "--version", version, "--out", str(tmp_path / "out"), "--corpus", "syl"]


def test_empty_split__refused_then_allowed(tmp_path: Path) -> None:
    _corpus(documents=2, per_document=5)
    with pytest.raises(CommandError, match=r"split is empty .*\[empty_split\].*--allow-empty-split"):
        _export(*_base(tmp_path))
    job = Job.objects.get(kind="export_release")
    assert job.status == Job.Status.FAILED
    assert {p["code"] for p in job.result["refused"]} == {"empty_split"}
    assert not Release.objects.exists()
    assert not list((tmp_path / "out").iterdir())  # nothing written, no staging left

    summary = _export(*_base(tmp_path), "--allow-empty-split")
    assert summary["counts"] == {"train": 10, "val": 0, "test": 0}
    assert {w["code"] for w in summary["warnings"]} == {"empty_split"}
    assert Release.objects.get(pk=summary["release_id"]).path == summary["path"]


def test_short_split__sciq_sizes_not_met(tmp_path: Path) -> None:
    _corpus(documents=6, per_document=1)
    args = [*_base(tmp_path), "--sciq-mode", "--allow-empty-split"]
    with pytest.raises(
        CommandError, match=r"val split has 6 item\(s\) from 6 document\(s\); 1000 were asked"
    ):
        _export(*args)
    summary = _export(*args, "--allow-short-split")
    assert summary["counts"] == {"train": 0, "val": 6, "test": 0}
    assert {w["code"] for w in summary["warnings"]} == {"empty_split", "short_split"}


def test_leakage__same_question_and_answer_in_two_original_splits(tmp_path: Path) -> None:
    corpus = make_textbook("mcq", [f"Passage {i} about cells and energy." for i in range(6)])
    for i, passage in enumerate(corpus.passages.order_by("position")):
        QAPair.objects.create(
            corpus=corpus,
            passage=passage,
            question_type=qt.SCIQ,
            question=f"Which organelle makes energy, variant {i}?",
            answer="mitochondria",
            original_split=["train", "train", "val", "val", "test", "test"][i],
        )
    copy = QAPair.objects.get(original_split="train", question__endswith="0?")
    test_pair = QAPair.objects.filter(original_split="test").first()
    test_pair.question, test_pair.answer = copy.question.upper(), "  " + copy.answer
    test_pair.save()
    args = [
        "--name",
        "mcq",
        "--version",
        "1",
        "--out",
        str(tmp_path),
        "--corpus",
        "mcq",
        "--use-original-splits",
    ]
    with pytest.raises(CommandError, match=r"1 question\(s\) with the same answer appear in two splits"):
        _export(*args)
    summary = _export(*args, "--allow-leakage")
    assert summary["counts"] == {"train": 2, "val": 2, "test": 2}
    assert [w["code"] for w in summary["warnings"]] == ["leakage"]


def test_same_syllabus_question_about_two_syllabi_is_not_leakage(tmp_path: Path) -> None:
    _corpus(documents=4, per_document=1)
    QAPair.objects.update(question="Are there any prerequisites?", answer="No")
    summary = _export(*_base(tmp_path), "--ratios", "0.5,0.25,0.25")
    assert summary["warnings"] == []


def test_command_runs_in_process_by_default(tmp_path: Path) -> None:
    _corpus(documents=4, per_document=3)
    out = StringIO()
    call_command("export_release", *_base(tmp_path), "--ratios", "0.5,0.25,0.25", stdout=out)
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["counts"] == {"train": 6, "val": 3, "test": 3} and Path(summary["path"]).is_dir()


def test_queued_command_refuses_before_queuing(tmp_path: Path) -> None:
    _corpus(documents=2, per_document=3)
    out = StringIO()
    with pytest.raises(CommandError, match="empty_split"):
        call_command("export_release", *_base(tmp_path), "--queue", stdout=out)
    assert not Job.objects.exists()


def test_queued_command_runs_as_a_celery_job(tmp_path: Path, settings) -> None:
    from config.celery import app

    _corpus(documents=4, per_document=3)
    old = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        out = StringIO()
        call_command("export_release", *_base(tmp_path), "--ratios", "0.5,0.25,0.25", "--queue", stdout=out)
    finally:
        app.conf.task_always_eager = old
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    job = Job.objects.get(pk=summary["job"])
    assert job.status == Job.Status.DONE and job.celery_task_id
    release = Release.objects.get(pk=job.result["release_id"])
    assert job.result["counts"] == {"train": 6, "val": 3, "test": 3} == release.counts
    card = (Path(release.path) / "card.md").read_text(encoding="utf-8")
    assert card.splitlines()[0] == "# syl 1.0"  # the release's name and version, not the corpus's


def test_job_fails_with_the_error_and_a_retry_finishes(tmp_path: Path, monkeypatch) -> None:
    _corpus(documents=4, per_document=3)
    request = ExportRequest(
        name="syl", version="1.0", out_dir=str(tmp_path / "out"), corpus="syl", ratios=(0.5, 0.25, 0.25)
    )
    job = Job.objects.create(kind=exporting.JOB_KIND, params=request.to_params())

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("exports.release.build_release", boom)
    with pytest.raises(ExportFailed, match="disk full"):
        export_release(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == "OSError: disk full" and job.finished_at
    monkeypatch.undo()

    export_release(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and not job.error
    first = job.result
    assert run_export(job.pk).result == first  # a done job is not exported again


def test_retry_after_a_crash_between_writing_and_registering(tmp_path: Path, monkeypatch) -> None:
    _corpus(documents=4, per_document=3)
    request = ExportRequest(
        name="syl", version="2.0", out_dir=str(tmp_path / "out"), corpus="syl", ratios=(0.5, 0.25, 0.25)
    )
    job = Job.objects.create(kind=exporting.JOB_KIND, params=request.to_params())
    import exports.services.releases as releases

    real_register = releases.register_release

    def killed(path, stored_at=None):  # noqa: ANN001, ANN202
        raise RuntimeError("worker lost")

    monkeypatch.setattr(releases, "register_release", killed)
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and "worker lost" in job.error
    written = Path(job.result["written"])
    manifest = (written / "manifest.json").read_bytes()

    monkeypatch.setattr(releases, "register_release", real_register)
    run_export(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.error
    assert (written / "manifest.json").read_bytes() == manifest  # registered, not written twice
    assert Release.objects.get(pk=job.result["release_id"]).path == str(written)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "bad name"}, "name", "letters, digits"),
        ({"corpus": None}, "source", "choose a corpus or one or more batches"),
        ({"corpus": "nope"}, "corpus", "no corpus named 'nope'"),
        ({"corpus": None, "batches": (999,)}, "batches", "no batch with id 999"),
        ({"ratios": (0.5, 0.5, 0.5)}, "ratios", "sum to"),
        ({"formats": ("xlsx",)}, "formats", "xlsx"),
        ({"allow": ("everything",)}, "allow", "unknown problem code"),
    ],
)
def test_bad_requests_name_the_field_and_create_no_job(tmp_path: Path, changes, field, message) -> None:
    _corpus(documents=1, per_document=1)
    request = ExportRequest(name="syl", version="1", out_dir=str(tmp_path), corpus="syl")
    bad = ExportRequest.from_params({**request.to_params(), **changes})
    with pytest.raises(ExportRequestError, match=message) as error:
        start_export(bad, sync=True)
    assert error.value.field == field
    assert not Job.objects.exists()


def test_default_formats_are_every_format_the_builder_writes() -> None:
    from exports.factories import FORMATS

    assert ExportRequest.formats == FORMATS


def test_release_records_read_no_syllabus_text_or_submitted_form() -> None:
    """Each pair's chunk query leaves out its syllabus text and its assignment's form; records unchanged."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import AnswerSpan
    from exports.dataset import PairRecords, pairs_for, records_for
    from tests.factories import make_assignment, make_batch

    corpus = _corpus(documents=3, per_document=2)
    assignment = make_assignment(batch=make_batch(corpus), answers={"form": "x" * 5000})
    pairs = QAPair.objects.filter(corpus=corpus).order_by("pk")
    pairs.update(assignment=assignment)
    AnswerSpan.objects.create(qa_pair=pairs[0], position=0, text="Office hours on day 0")
    selection = pairs_for(corpus=corpus)
    with CaptureQueriesContext(connection) as queries:
        streamed = list(PairRecords(selection))
    assert streamed == sorted(records_for(list(selection)), key=lambda r: r.id)
    assert streamed[0].worker and any(r.answer_spans for r in streamed)
    joined = [q["sql"] for q in queries.captured_queries if '"annotation_document"' in q["sql"]]
    assert joined
    assert not [sql for sql in joined if '"annotation_document"."text"' in sql]
    assert not [sql for sql in joined if '"annotation_assignment"."answers"' in sql]


def test_release_records_are_read_from_the_database_once_per_export() -> None:
    """Later passes (leak check, writing) read the first pass's spill: no query, the same records, even
    after the pairs change; an abandoned first pass leaves nothing to read and its file is removed."""
    import gc

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from exports.dataset import PairRecords, pairs_for

    corpus = _corpus(documents=3, per_document=2)

    def spills() -> set[Path]:
        return set(Path(tempfile.gettempdir()).glob("crowdqa-records-*.pickle"))

    stream = PairRecords(pairs_for(corpus=corpus))
    before = spills()  # other processes' spills (a parallel run, a killed one) are not this pass's
    abandoned = iter(stream)
    next(abandoned)
    spill_files = spills() - before
    assert spill_files
    del abandoned
    gc.collect()
    assert not spills() & spill_files
    first = list(stream)
    QAPair.objects.filter(corpus=corpus).update(question="changed")
    with CaptureQueriesContext(connection) as queries:
        second, third = list(stream), list(stream)
    assert len(queries) == 0
    assert first == second == third and len(first) == 6
    assert "changed" not in {r.question for r in first}
