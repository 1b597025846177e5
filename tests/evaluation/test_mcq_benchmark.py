"""Multiple-choice (SciQ) benchmarks on real SciQ items, and runs refused on an empty split (n=0)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation.mcq import LETTERS, read_mcq_split
from evaluation.models import BenchmarkRun
from evaluation.services.execution import execute_run
from evaluation.services.leaderboard import leaderboard
from evaluation.services.runs import RunRequest, prepare_run
from exports.models import Release
from tests.fakes.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.django_db

TEST_ITEMS = 8


def _json_tail(out: StringIO) -> dict:
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _sciq_subset(root: Path, dest: Path, sizes: dict[str, int]) -> Path:
    """The first items of each real SciQ file (same file names and fields)."""
    dest.mkdir()
    for name, size in sizes.items():
        items = json.loads((root / f"{name}.json").read_text(encoding="utf-8"))[:size]
        (dest / f"{name}.json").write_text(json.dumps(items), encoding="utf-8")
    return dest


@pytest.fixture
def sciq_release(shared_data, tmp_path: Path) -> Path:
    """Real SciQ items imported and exported with SciQ's own splits (2 train, 2 valid, 8 test)."""
    source = _sciq_subset(
        shared_data("sciq"), tmp_path / "sciq", {"train": 2, "valid": 2, "test": TEST_ITEMS}
    )
    call_command("import_sciq", str(source), "--corpus", "sciq-small", stdout=StringIO())
    out = StringIO()
    call_command(
        "export_release", "--name", "sciq-small", "--version", "1", "--out", str(tmp_path / "releases"),
        "--corpus", "sciq-small", "--use-original-splits", "--formats", "jsonl", "--sync", stdout=out,
    )  # fmt: skip
    return Path(_json_tail(out)["path"])


def _run(release: Path, *args: str) -> BenchmarkRun:
    out = StringIO()
    call_command(
        "run_benchmark", "--release", str(release), "--system", "zero-shot", "--sync", *args, stdout=out
    )
    return BenchmarkRun.objects.get(pk=_json_tail(out)["run"])


def _sciq_answers(shared_data) -> dict[str, str]:
    items = json.loads((shared_data("sciq") / "test.json").read_text(encoding="utf-8"))[:TEST_ITEMS]
    return {item["question"]: item["correct_answer"] for item in items}


def test_mcq_accuracy__default_small_local_model_by_loglikelihood(sciq_release: Path, shared_data) -> None:
    run = _run(sciq_release, "--split", "test")
    assert run.status == "done" and run.n_items == TEST_ITEMS
    assert run.params["method"] == "loglikelihood" and "sciq_mcq_loglik" in run.prompts
    results = json.loads(Path(run.results_path).read_text(encoding="utf-8"))["items"]
    answers = _sciq_answers(shared_data)
    for row in results:
        # The key the release wrote points at SciQ's own correct answer; the choice is the likeliest option.
        assert row["options"][LETTERS.index(row["answer_key"])] == answers[row["question"]]
        scores = row["loglikelihoods"]
        assert len(scores) == 4 and row["chosen"] == LETTERS[scores.index(max(scores))]
    assert run.metrics["accuracy"] == sum(r["correct"] for r in results) / TEST_ITEMS
    assert (
        run.metrics["accuracy_norm"] == sum(r["chosen_norm"] == r["answer_key"] for r in results) / TEST_ITEMS
    )
    assert run.metrics["unanswered"] == 0

    board = leaderboard(Release.objects.get(pk=run.release_id))
    assert ("accuracy", "Accuracy") in board["columns"] and [r["run"].pk for r in board["rows"]] == [run.pk]


def test_mcq_accuracy__openai_compatible_endpoint(sciq_release: Path, shared_data, monkeypatch) -> None:
    answers = _sciq_answers(shared_data)
    knows = sorted(answers)[: TEST_ITEMS // 2]

    def respond(request: dict) -> str:
        prompt = request["messages"][-1]["content"]
        question = prompt.split("\n")[0].removeprefix("Question: ")
        if question not in knows:
            return "I am not sure."
        for line in prompt.split("\n")[1:]:
            if line[2:].strip() == answers[question]:
                return f"The answer is ({line[0]})."
        raise AssertionError(f"answer of {question!r} not among the options")

    with FakeOpenAIServer([], responder=respond) as server:
        monkeypatch.setenv("LLM_API_BASE", server.api_base)
        monkeypatch.setenv("LLM_MODEL", "fake-model")
        run = _run(sciq_release, "--model", "openai", "--metrics", "accuracy")
        assert len(server.requests) == TEST_ITEMS
    assert run.status == "done" and run.model_name == "openai:fake-model" and run.params["method"] == "letter"
    assert run.metrics == {"n": TEST_ITEMS, "accuracy": 0.5, "unanswered": TEST_ITEMS // 2}


def test_mcq_release__open_qa_systems_and_metrics_refused(sciq_release: Path) -> None:
    with pytest.raises(CommandError, match="multiple-choice release runs zero-shot"):
        call_command(
            "run_benchmark", "--release", str(sciq_release), "--system", "rag", "--sync", stdout=StringIO()
        )
    with pytest.raises(CommandError, match="'rouge_l' does not apply to a multiple-choice release"):
        _run(sciq_release, "--metrics", "rougeL")
    assert not BenchmarkRun.objects.exists()


def test_empty_split__refused_never_done_never_listed(
    sciq_release: Path, shared_data, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    _sciq_subset(shared_data("sciq"), empty, {"train": 3, "valid": 0, "test": 1})
    call_command("import_sciq", str(empty), "--corpus", "sciq-empty-val", stdout=StringIO())
    out = StringIO()
    call_command(
        "export_release", "--name", "sciq-empty-val", "--version", "1", "--out", str(tmp_path / "r"),
        "--corpus", "sciq-empty-val", "--use-original-splits", "--formats", "csv", "--sync",
        "--allow-empty-split", stdout=out,
    )  # fmt: skip
    release_dir = Path(_json_tail(out)["path"])
    assert read_mcq_split(release_dir, "val") == []
    with pytest.raises(CommandError, match="split 'val' of release sciq-empty-val 1 has no items"):
        _run(release_dir, "--split", "val")
    assert not BenchmarkRun.objects.exists()

    # A run queued before the split emptied (or a row written by an older version) fails with the reason.
    run, _ = prepare_run(RunRequest(release_dir=release_dir, system="zero-shot", split="test"))
    run.split = "val"
    run.save()
    with pytest.raises(Exception, match="has no items"):
        execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == "failed" and "has no items" in run.error and run.n_items == 0
    BenchmarkRun.objects.create(
        release=run.release, system="zero-shot", status="done", n_items=0, metrics={"n": 0}
    )
    assert leaderboard(run.release)["rows"] == []
