"""run_benchmark on a small real SyllabusQA release: stored figures, reuse, failures, the queue path."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evaluation import metrics
from evaluation.baselines import run_system
from evaluation.models import BenchmarkRun
from evaluation.services.items import load_split_items

pytestmark = pytest.mark.django_db


def _run(*args: str) -> tuple[dict, str]:
    out = StringIO()
    call_command("run_benchmark", *args, stdout=out)
    text = out.getvalue()
    return json.loads(text.strip().splitlines()[-1]), text


def test_run_benchmark__search_sync_stores_the_metrics_of_evaluation_metrics(small_release: Path) -> None:
    search = ["--release", str(small_release), "--system", "search", "--limit", "12", "--sync"]
    search += ["--metrics", "rougeL"]
    summary, text = _run(*search)
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert summary["status"] == run.status == "done" and not summary["reused"]
    items = load_split_items(small_release, "test", 12)
    expected = metrics.score(run_system("search", items), items, ("rouge_l",))
    assert run.n_items == 12
    assert run.metrics == {"n": 12, "rouge_l_f1": pytest.approx(expected["rouge_l_f1"])}
    for qtype, value in expected["rouge_l_f1_per_type"].items():
        assert run.stratified["question_type"][qtype]["rouge_l_f1"] == pytest.approx(value)
    results = json.loads(Path(run.results_path).read_text(encoding="utf-8"))
    assert [item["id"] for item in results["items"]] == [item.id for item in items]
    assert results["items"][0]["scores"]["rouge_l_f1"] == pytest.approx(
        expected["items"][items[0].id]["rouge_l_f1"]
    )
    assert "overall" in text and run.params["chunk_size"] == 200 and run.params["chunk_overlap"] == 50

    again, text = _run(*search)
    assert again["run"] == run.pk and again["reused"] and "reused" in text
    forced, _ = _run(*search, "--force")
    assert forced["run"] != run.pk and forced["metrics"] == summary["metrics"]


def test_run_benchmark__model_that_cannot_load_is_stored_as_failed(
    small_release: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    args = ["--release", str(small_release), "--system", "zero-shot", "--model", str(empty), "--limit", "2"]
    out = StringIO()
    with pytest.raises(CommandError, match=r"BenchmarkRun\(\d+\) failed"):
        call_command("run_benchmark", *args, "--sync", "--metrics", "rougeL", stdout=out)
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert run.status == summary["status"] == "failed"
    assert "not-a-model" in run.error and run.error == summary["error"]
    assert run.finished is not None and not run.results_path
    assert run.prompts["syllabus_system"].strip()
    # A failed run is never reused: asking again makes a new run.
    with pytest.raises(CommandError):
        call_command("run_benchmark", *args, "--sync", "--metrics", "rougeL", stdout=StringIO())
    assert BenchmarkRun.objects.filter(status="failed").count() == 2


def test_run_benchmark__missing_syllabus_is_named_and_no_run_is_created(small_release: Path) -> None:
    from annotation.models import Document

    Document.objects.filter(name="L0").update(name="L0 (renamed)")  # as if it had never been imported
    with pytest.raises(CommandError, match=r"not imported: L0 "):
        _run("--release", str(small_release), "--system", "search", "--sync")
    assert not BenchmarkRun.objects.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--metrics", "bleu"], "unknown metric 'bleu'"),
        (["--metrics", "factqa"], "needs a judge"),
        (["--metrics", "entailment"], "needs a judge"),
        (["--adapter", "/nonexistent-adapter"], "not a directory"),
    ],
)
def test_run_benchmark__bad_options_are_refused(small_release: Path, extra: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        _run("--release", str(small_release), "--system", "search", "--sync", *extra)
    assert not BenchmarkRun.objects.exists()


def test_run_benchmark__without_sync_queues_the_gpu_task(small_release: Path, monkeypatch) -> None:
    from evaluation import tasks

    sent: list[int] = []

    class FakeResult:
        id = "task-1"

    monkeypatch.setattr(tasks.gpu_run_benchmark, "delay", lambda run_id: sent.append(run_id) or FakeResult())
    summary, text = _run("--release", str(small_release), "--system", "search", "--limit", "3")
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert sent == [run.pk] and run.status == "queued" and run.task_id == summary["task"] == "task-1"
    assert f"/benchmarks/run/{run.pk}/" in text
    # The task itself (as a worker would call it) finishes the run; a second delivery changes nothing.
    result = tasks.gpu_run_benchmark.apply(args=[run.pk]).get()
    run.refresh_from_db()
    assert result["status"] == run.status == "done" and run.n_items == 3
    finished = run.finished
    tasks.gpu_run_benchmark.apply(args=[run.pk]).get()
    run.refresh_from_db()
    assert run.finished == finished


def test_run_benchmark__factqa_with_an_endpoint_judge_is_stored_and_cached(
    small_release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evaluation.factqa import fact_qa_item_scores
    from evaluation.llm import OpenAIChatBackend
    from tests.fakes.fake_openai_server import FakeOpenAIServer, Reply

    with FakeOpenAIServer([Reply(text="Claims: ...\nScore: 1/2")]) as server:
        monkeypatch.setenv("LLM_API_BASE", server.api_base)
        monkeypatch.setenv("LLM_MODEL", "fake-judge")
        args = ["--release", str(small_release), "--system", "search", "--limit", "6", "--sync"]
        summary, text = _run(*args, "--metrics", "rougeL,factqa", "--judge", "openai")
        calls = len(server.requests)
        assert calls > 0
        items = load_split_items(small_release, "test", 6)
        expected = fact_qa_item_scores(
            [i.question for i in items],
            [p.answer for p in run_system("search", items)],
            [i.answer for i in items],
            backend=OpenAIChatBackend(server.api_base, "fake-judge"),
        )
        run = BenchmarkRun.objects.get(pk=summary["run"])
        for key in ("fact_qa_p", "fact_qa_r", "fact_qa_f"):
            values = [v for v in expected[key] if v is not None]
            assert run.metrics[key] == pytest.approx(sum(values) / len(values))
        assert run.params["judge_model"] == "openai:fake-judge" and "factqa_judge" in run.prompts
        assert "fact_qa_f" in text
        before = len(server.requests)
        _run(*args, "--metrics", "rougeL,factqa", "--judge", "openai", "--force")
        assert len(server.requests) == before  # every judge reply came from the run's cache


def test_run_benchmark__sft_job_fine_tunes_on_train_and_scores_its_generations(
    small_release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SFT baseline as a gpu-queue job on CPU: a LoRA fine-tune of the default small model on the
    release's real train split (a few steps), then its generations on test, scored end to end."""
    from evaluation import tasks

    class FakeResult:
        id = "task-sft"

    monkeypatch.setattr(tasks.gpu_run_benchmark, "delay", lambda run_id: FakeResult())
    summary, _ = _run(
        "--release",
        str(small_release),
        "--system",
        "sft",
        "--limit",
        "2",
        "--sft-steps",
        "2",
        "--sft-train-items",
        "4",
        "--max-new-tokens",
        "12",
        "--metrics",
        "rougeL",
    )
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert run.status == "queued"
    result = tasks.gpu_run_benchmark.apply(args=[run.pk]).get()  # what the gpu worker runs
    run.refresh_from_db()
    assert result["status"] == run.status == "done", run.error
    trained = run.params["sft_result"]
    assert trained["steps"] == 2 and (Path(trained["adapter_dir"]) / "adapter_model.safetensors").is_file()
    saved = json.loads(Path(run.results_path).read_text(encoding="utf-8"))
    answers = [item["prediction"]["answer"] for item in saved["items"]]
    references = [item["reference"] for item in saved["items"]]
    assert references == [item.answer for item in load_split_items(small_release, "test", 2)]
    assert len(answers) == 2 and all(isinstance(a, str) for a in answers)
    expected = sum(metrics.rouge_l_f1(answers, references)) / 2
    assert run.metrics["rouge_l_f1"] == pytest.approx(expected)


def test_run_benchmark__iso_8859_1_reads_syllabi_as_the_authors_and_is_not_confused_with_mac_roman(
    small_release: Path, shared_data
) -> None:
    args = ["--release", str(small_release), "--system", "search", "--limit", "6", "--sync"]
    args += ["--metrics", "rougeL"]
    faithful, _ = _run(*args)
    authors, _ = _run(*args, "--syllabus-decoding", "iso-8859-1")
    assert not authors["reused"] and authors["run"] != faithful["run"]
    runs = {run.pk: run for run in BenchmarkRun.objects.all()}
    assert runs[faithful["run"]].params["syllabus_decoding"] == "mac_roman"
    assert runs[authors["run"]].params["syllabus_decoding"] == "iso-8859-1"
    again, _ = _run(*args, "--syllabus-decoding", "iso-8859-1")
    assert again["reused"] and again["run"] == authors["run"]
    # The text the run searched is what the authors' load_syllabi reads: open(..., encoding="ISO-8859-1").
    item = load_split_items(small_release, "test", 1, decoding="iso-8859-1")[0]
    path = shared_data("syllabusqa") / "syllabi" / "syllabi_redacted" / "text" / f"{item.document_name}.txt"
    with open(path, encoding="ISO-8859-1") as handle:
        assert item.document == handle.read()
    assert item.document != load_split_items(small_release, "test", 1)[0].document


def test_run_benchmark__a_run_stored_before_the_decoding_option_is_reused_as_mac_roman(
    small_release: Path,
) -> None:
    args = ["--release", str(small_release), "--system", "search", "--limit", "3", "--sync"]
    first, _ = _run(*args, "--metrics", "rougeL")
    run = BenchmarkRun.objects.get(pk=first["run"])
    run.params = {k: v for k, v in run.params.items() if k != "syllabus_decoding"}
    run.save(update_fields=["params"])
    again, _ = _run(*args, "--metrics", "rougeL")
    iso, _ = _run(*args, "--metrics", "rougeL", "--syllabus-decoding", "iso-8859-1")
    assert again["reused"] and again["run"] == run.pk
    assert not iso["reused"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def _entailment_responder(request: dict) -> str:
    """A judge that restates an answer as itself and says a statement entails every subset of its words."""
    prompt = request["messages"][-1]["content"]
    if prompt.startswith("Convert a question answer pair"):
        answer = prompt.rsplit("\nA: ", 1)[1].rsplit("\nS:", 1)[0]
        return "S: " + " ".join(answer.split())
    if prompt.startswith("Please identify whether the premise entails"):
        match = re.search(r"Premise: (.*)\nHypothesis: (.*)\nIs it entailment", prompt, re.S)
        assert match is not None
        premise, hypothesis = match.groups()
        return "entailment" if _words(hypothesis) <= _words(premise) else "neutral"
    return "1. Restate the premise. (Given)\n2. Keep the shared part. [[INFO]]"  # mark 100 - 20 - 3 = 77


def test_run_benchmark__entailment_with_an_endpoint_judge_is_stored_cached_and_on_the_leaderboard(
    small_release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.test import Client
    from django.urls import reverse

    from tests.factories import make_researcher
    from tests.fakes.fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer([], responder=_entailment_responder) as server:
        monkeypatch.setenv("LLM_API_BASE", server.api_base)
        monkeypatch.setenv("LLM_MODEL", "fake-judge")
        args = ["--release", str(small_release), "--system", "search", "--limit", "12", "--sync"]
        summary, text = _run(*args, "--metrics", "entailment", "--judge", "openai")
        assert len(server.requests) > 0
        before = len(server.requests)
        _run(*args, "--metrics", "entailment", "--judge", "openai", "--force")
        assert len(server.requests) == before  # every judge reply came from the run's cache

    items = load_split_items(small_release, "test", 12)
    predictions = {p.id: p.answer for p in run_system("search", items)}
    expected_correct, expected_mark = [], []
    for item in items:
        forward = _words(item.answer) <= _words(predictions[item.id])
        backward = _words(predictions[item.id]) <= _words(item.answer)
        expected_correct.append(1.0 if forward or backward else 0.0)
        expected_mark.append(1.0 if forward and backward else 0.77 if forward or backward else 0.0)
    assert 0 < sum(expected_correct) < len(items)  # the release has answers judged both ways
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert run.metrics["n"] == 12
    assert run.metrics["entailment"] == pytest.approx(sum(expected_correct) / 12)
    assert run.metrics["entailment_mark"] == pytest.approx(sum(expected_mark) / 12)
    assert {"qa2d", "nli", "inference_steps"} <= set(run.prompts) and "entailment" in run.timings
    some_type = next(iter(run.stratified["question_type"]))
    assert "entailment" in run.stratified["question_type"][some_type]
    results = json.loads(Path(run.results_path).read_text(encoding="utf-8"))
    assert [i["scores"]["entailment"] for i in results["items"]] == expected_correct
    assert [i["scores"]["entailment_mark"] for i in results["items"]] == pytest.approx(expected_mark)
    assert "entailment" in text

    researcher = Client()
    researcher.force_login(make_researcher())
    html = researcher.get(reverse("evaluation:leaderboard", args=[run.release_id])).content.decode()
    assert "Entailment (judged correct)" in html and f"{run.metrics['entailment']:.4f}" in html
    assert "Entailment partial mark by question type" in html


def test_run_benchmark__entailment_with_the_local_model_judge_runs_on_cpu(small_release: Path) -> None:
    from evaluation.entailment import EntailmentJudge, entailment_item_scores
    from evaluation.llm import HFCausalLMBackend
    from evaluation.services.execution import _judge_cache

    args = ["--release", str(small_release), "--system", "search", "--limit", "1", "--sync"]
    summary, _ = _run(*args, "--metrics", "rougeL,entailment", "--judge", "local")
    run = BenchmarkRun.objects.get(pk=summary["run"])
    assert run.status == "done" and run.params["judge"] == "local"
    results = json.loads(Path(run.results_path).read_text(encoding="utf-8"))
    stored = [item["scores"] for item in results["items"]]
    assert all(s["entailment"] in (0.0, 1.0) and 0.0 <= s["entailment_mark"] <= 1.0 for s in stored)
    assert run.metrics["entailment"] == stored[0]["entailment"] and len(stored) == 1

    class CacheOnly:
        """The local judge's name without its weights: every reply must come from the run's cache."""

        name = HFCausalLMBackend().name

        def chat(self, messages, *, max_new_tokens: int = 256, temperature: float = 0.0) -> str:  # noqa: ANN001
            raise AssertionError("a judge reply was not cached")

    backend = CacheOnly()
    items = load_split_items(small_release, "test", 1)
    again = entailment_item_scores(
        [i.question for i in items],
        [i["prediction"]["answer"] for i in results["items"]],
        [i.answer for i in items],
        judge=EntailmentJudge.llm(backend, _judge_cache(backend)),
    )
    assert again == {key: [s[key] for s in stored] for key in ("entailment", "entailment_mark")}
