"""The RAG system in the loop, on a real SyllabusQA syllabus: a batch that chooses ``rag`` has its cards
answered by an LLM with the top-5 chunks through the same page, job (``gpu`` queue) and record as the
search baseline; an endpoint that is down leaves the card with "no model answer" and the submission
whole; the replay command takes ``--system rag``.

The LLM is a small randomly initialised Llama behind the real generation path
(:class:`evaluation.llm.HFCausalLMBackend`), as in the SciQ artifact check's tests: the packaged SmolLM2
takes minutes to load on a busy test machine. Its answers are noise, so the tests check the path and
the record, not the model's quality; a scripted backend checks the abstention rule.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import question_types as qt
from annotation.batch_options import BatchOptionsError, check_batch_options
from annotation.hits.syllabus_qa import CARD_TYPES
from annotation.models import Assignment, Batch, ModelCheck, QAPair
from evaluation import loop_tasks
from evaluation import model_in_the_loop as mitl
from evaluation.llm import HFCausalLMBackend
from evaluation.model_in_the_loop import FOOLED, MATCHED, check_pair, system_version
from evaluation.schema import INSUFFICIENT_ANSWER
from evaluation.services.model_checks import fooled_rates, loop_settings, record_submission
from tests.annotation.test_syllabus_hit import claimed_hit, form_fields, import_one_syllabus
from tests.evaluation.test_model_checks import ask, launch_loop_batch
from tests.tiny_llm import tiny_llama

pytestmark = pytest.mark.django_db


class ByteTokenizer:
    """One token per byte, enough for generation: ids in, text out."""

    pad_token_id = 0
    eos_token_id = 0
    chat_template = None

    def __call__(self, text: str, return_tensors: str = "pt", add_special_tokens: bool = False) -> Any:
        import torch
        from transformers import BatchEncoding

        ids = torch.tensor([list(text.encode("utf-8"))])
        return BatchEncoding({"input_ids": ids, "attention_mask": torch.ones_like(ids)})

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return bytes(int(i) for i in ids if int(i) != 0).decode("utf-8", errors="replace")


@pytest.fixture(scope="module")
def small_llm() -> HFCausalLMBackend:
    """A 2-layer Llama (random, seeded) with a byte tokenizer as the RAG system's LLM."""
    return HFCausalLMBackend(model=tiny_llama(16384), tokenizer=ByteTokenizer())


@pytest.fixture
def rag_llm(small_llm: HFCausalLMBackend, monkeypatch: pytest.MonkeyPatch) -> HFCausalLMBackend:
    monkeypatch.setattr(mitl, "rag_backend", lambda: small_llm)
    monkeypatch.setattr(mitl, "RAG_MAX_NEW_TOKENS", 16)  # noise either way; keeps 14 cards quick
    return small_llm


@pytest.fixture
def endpoint_down(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The RAG system configured for an OpenAI-compatible endpoint nobody listens on (port 9)."""
    monkeypatch.setenv("LLM_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "loop-model")
    mitl.rag_backend.cache_clear()
    yield
    mitl.rag_backend.cache_clear()


@pytest.fixture
def rag_hit(shared_data: Callable[[str], Path], tmp_path: Path, settings: Any, eager_celery: None) -> dict:
    """A claimed syllabus HIT on a real syllabus whose batch asks the RAG system (mode ``ask``)."""
    hit = claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = hit["batch"]
    batch.options = {**batch.options, "model_in_the_loop": {"mode": "ask", "system": "rag"}}
    batch.save()
    hit["check_url"] = hit["url"].rstrip("/") + "/model-check/"
    return hit


class Scripted:
    """A backend with a fixed reply that keeps the prompts it was sent."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def chat(self, messages: list, *, max_new_tokens: int = 256, temperature: float = 0.0) -> str:
        self.prompts.append(messages[-1].content)
        return self.reply


def test_rag__prompt_has_the_top5_chunks_and_abstention_is_judged(
    shared_data: Callable[[str], Path], tmp_path: Path
) -> None:
    syllabus = import_one_syllabus(shared_data("syllabusqa"), tmp_path).text
    says_none = Scripted("No/insufficient information.")
    result = check_pair(
        syllabus, "Is there a field trip?", INSUFFICIENT_ANSWER, qt.NO_ANSWER, "rag", backend=says_none
    )
    assert (result.system, result.abstained, result.model_answer, result.verdict) == (
        "rag",
        True,
        INSUFFICIENT_ANSWER,
        MATCHED,
    )
    assert says_none.prompts[0].count("### Snippet") == mitl.RAG_K
    answers = Scripted("The final exam is worth 40% of the grade.")
    got = check_pair(syllabus, "How much is the final?", "40%", qt.SINGLE_FACTUAL, "rag", backend=answers)
    assert (got.abstained, got.verdict, got.score) == (False, MATCHED, 1.0)
    wrong = check_pair(syllabus, "How much is the final?", "25%", qt.SINGLE_FACTUAL, "rag", backend=answers)
    assert wrong.verdict == FOOLED
    # On a no-answer question, a RAG model that answers anyway is fooled.
    fooled = check_pair(
        syllabus, "Is there a field trip?", INSUFFICIENT_ANSWER, qt.NO_ANSWER, "rag", backend=answers
    )
    assert fooled.verdict == FOOLED
    assert system_version("rag", backend=answers).startswith("rag: scripted, prompt J.1 with top-5")


def test_option__rag_accepted_unknown_system_refused() -> None:
    with pytest.raises(BatchOptionsError, match="model_in_the_loop"):
        check_batch_options({"model_in_the_loop": {"mode": "show", "system": "gpt-4"}})
    check_batch_options({"model_in_the_loop": {"mode": "show", "system": "rag"}})
    batch = Batch(kind=Batch.Kind.SYLLABUS_QA, name="x")
    batch.options = {"model_in_the_loop": {"mode": "ask", "system": "rag"}}
    assert loop_settings(batch).system == "rag"


def test_rag_jobs__run_on_the_gpu_queue() -> None:
    from config.celery import app

    assert loop_tasks.card_task("rag") is loop_tasks.gpu_model_check_card
    assert loop_tasks.card_task("search") is loop_tasks.model_check_card
    assert loop_tasks.submission_task("rag") is loop_tasks.gpu_model_check_submission
    router = app.amqp.router
    for task in (loop_tasks.gpu_model_check_card, loop_tasks.gpu_model_check_submission):
        assert router.route({}, task.name)["queue"].name == "gpu"
    assert router.route({}, loop_tasks.model_check_card.name)["queue"].name == "default"


def test_card_check__rag_answers_through_the_page_and_is_recorded(
    client: Any,
    rag_hit: dict,
    rag_llm: HFCausalLMBackend,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    queued: list[str] = []
    for task in (loop_tasks.gpu_model_check_card, loop_tasks.gpu_model_check_submission):
        original = task.apply_async

        def spy(*args: Any, _task: Any = task, _original: Any = original, **kwargs: Any) -> Any:
            queued.append(_task.name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(task, "apply_async", spy)
    for card in (0, CARD_TYPES.index(qt.NO_ANSWER)):
        result = ask(client, rag_hit, card)
        assert result["status"] == "answered", result
        assert result["system"] == "rag" and result["judge"] == "lexical"
        assert result["verdict"] in (FOOLED, MATCHED) and result["latency_ms"] > 0
    checks = ModelCheck.objects.filter(assignment=rag_hit["assignment"])
    assert checks.count() == 2
    assert {c.system for c in checks} == {"rag"}
    assert {c.model_version for c in checks} == {system_version("rag", backend=rag_llm)}
    assert all(c.model_version.startswith("rag: hf:LlamaForCausalLM") for c in checks)
    # The submission's job (gpu queue too) asks about the other 12 cards and links the two the page checked.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(rag_hit["url"], form_fields(rag_hit["cards"]))
    assert response.status_code in (200, 302)
    assert queued == [
        *["evaluation.loop_tasks.gpu_model_check_card"] * 2,
        "evaluation.loop_tasks.gpu_model_check_submission",
    ]
    assert ModelCheck.objects.filter(qa_pair__isnull=False, system="rag").count() == len(CARD_TYPES)
    assert fooled_rates(rag_hit["batch"])["overall"]["checked"] == len(CARD_TYPES)


def test_card_check__rag_endpoint_down_fails_open(client: Any, rag_hit: dict, endpoint_down: None) -> None:
    result = ask(client, rag_hit, 1)
    assert result["status"] == "pending"  # nothing stored: the page's wait runs out into "no model answer"
    assert not ModelCheck.objects.exists()
    response = client.post(rag_hit["url"], form_fields(rag_hit["cards"]))
    assert response.status_code in (200, 302)
    assignment = rag_hit["assignment"]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert QAPair.objects.filter(assignment=assignment).count() == len(CARD_TYPES)
    assert record_submission(assignment.pk) == {"linked": 0, "asked": 0, "unanswered": len(CARD_TYPES)}
    assert fooled_rates(rag_hit["batch"])["unchecked"] == len(CARD_TYPES)


def test_launch_batch__model_system_rag(
    shared_data: Callable[[str], Path], tmp_path: Path, settings: Any
) -> None:
    claimed_hit(shared_data("syllabusqa"), tmp_path, settings, Batch.Kind.SYLLABUS_QA)
    batch = launch_loop_batch("--model-in-the-loop", "show", "--model-system", "rag")
    assert batch.options["model_in_the_loop"]["system"] == "rag"


def test_replay__system_rag_on_real_pairs_and_endpoint_down(
    shared_data: Callable[[str], Path],
    trimmed_syllabusqa: Callable[[Path], Path],
    small_llm: HFCausalLMBackend,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = trimmed_syllabusqa(shared_data("syllabusqa"))
    call_command("import_syllabusqa", str(source), "--corpus", "sqa-rag", stdout=io.StringIO())
    with monkeypatch.context() as patched:
        patched.setattr(mitl, "rag_backend", lambda: small_llm)
        out = io.StringIO()
        call_command(
            "model_in_the_loop",
            "--corpus",
            "sqa-rag",
            "--system",
            "rag",
            "--limit",
            "4",
            "--json",
            stdout=out,
        )
    summary = json.loads(out.getvalue().strip().splitlines()[-1])
    assert summary["system"] == "rag" and summary["n"] == 4
    assert summary["model_version"].startswith("rag: hf:LlamaForCausalLM")
    assert summary["fooled"] + summary["matched"] == 4
    monkeypatch.setenv("LLM_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LLM_MODEL", "loop-model")
    mitl.rag_backend.cache_clear()
    try:
        with pytest.raises(CommandError, match="system rag: the model failed"):
            call_command(
                "model_in_the_loop",
                "--corpus",
                "sqa-rag",
                "--system",
                "rag",
                "--limit",
                "1",
                stdout=io.StringIO(),
            )
    finally:
        mitl.rag_backend.cache_clear()


def test_new_batch_form__model_system_choice(client: Any) -> None:
    from tests.annotation.test_new_batch_page import BASE
    from tests.factories import make_corpus, make_document, make_researcher

    make_document(make_corpus(name="syl"), name="bio101")
    client.force_login(make_researcher())
    loop = {"model_loop": "show", "model_judge": "rouge_l"}
    page = client.post("/batches/new/", {**BASE, **loop, "model_system": "gpt-4", "action": "draft"})
    assert page.status_code == 400 and not Batch.objects.exists()
    assert "Select a valid choice" in page.content.decode()
    response = client.post("/batches/new/", {**BASE, **loop, "model_system": "rag", "action": "draft"})
    assert response.status_code == 302
    assert Batch.objects.get().options["model_in_the_loop"] == {
        "mode": "show",
        "system": "rag",
        "judge": "rouge_l",
        "validation": False,
    }


class Judge:
    """A Fact-QA judge with scripted replies, one per call (the repair follow-up included)."""

    name = "judge"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def chat(self, messages: list, *, max_new_tokens: int = 256, temperature: float = 0.0) -> str:
        self.prompts.append(messages[0].content)
        return self.replies.pop(0)


def test_fact_qa_judge__f1_threshold_and_no_score_is_no_verdict(
    shared_data: Callable[[str], Path], tmp_path: Path
) -> None:
    syllabus = import_one_syllabus(shared_data("syllabusqa"), tmp_path).text
    question = "How are office hours held?"
    # search answers; the judge counts claims both ways: precision 1/1, recall 1/3 -> F1 0.5
    judge = Judge("Score: 1/1", "Score: 1/3")
    result = check_pair(
        syllabus, question, "By appointment.", qt.SINGLE_FACTUAL, "search", "fact_qa", backend=judge
    )
    assert (result.judge, result.verdict, round(result.score, 3)) == ("fact_qa", MATCHED, 0.5)
    assert question in judge.prompts[0] and "By appointment." in judge.prompts[0]
    low = Judge("Score: 0/2", "Score: 0/1")
    assert (
        check_pair(syllabus, question, "x", qt.SINGLE_FACTUAL, "search", "fact_qa", backend=low).verdict
        == FOOLED
    )
    # No valid score, even after the format-only follow-up: no verdict (the page shows "no model answer").
    with pytest.raises(ValueError, match="no valid score"):
        check_pair(
            syllabus, question, "x", qt.SINGLE_FACTUAL, "search", "fact_qa", backend=Judge(*["hmm"] * 4)
        )
    # The no-answer type is still judged by abstention: no judge call.
    silent = Judge()
    got = check_pair(
        syllabus,
        "Is there a field trip?",
        INSUFFICIENT_ANSWER,
        qt.NO_ANSWER,
        "search",
        "fact_qa",
        backend=silent,
    )
    assert got.verdict in (FOOLED, MATCHED) and silent.prompts == []
    assert system_version("search", backend=judge, judge="fact_qa").endswith("; Fact-QA judge: judge")
    assert loop_tasks.card_task("search", "fact_qa") is loop_tasks.gpu_model_check_card
    assert loop_tasks.submission_task("search", "fact_qa") is loop_tasks.gpu_model_check_submission
    check_batch_options({"model_in_the_loop": {"mode": "show", "judge": "fact_qa"}})


def test_fact_qa_judge__card_through_the_page_with_the_configured_judge(
    client: Any, rag_hit: dict, small_llm: HFCausalLMBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    batch = rag_hit["batch"]
    batch.options = {
        **batch.options,
        "model_in_the_loop": {"mode": "show", "system": "search", "judge": "fact_qa"},
    }
    batch.save()
    judge = Judge("Score: 2/2", "Score: 1/1")
    monkeypatch.setattr(mitl, "rag_backend", lambda: judge)
    data = form_fields(rag_hit["cards"])
    posted = client.post(
        rag_hit["check_url"], {"card": 2, "question": data["qa-2-question"], "answer": data["qa-2-answer"]}
    )
    assert posted.status_code == 202
    check = ModelCheck.objects.get(assignment=rag_hit["assignment"], position=2)
    assert (check.system, check.judge, check.verdict, check.score) == ("search", "fact_qa", MATCHED, 1.0)
    assert check.model_version == system_version("search", backend=judge, judge="fact_qa")
