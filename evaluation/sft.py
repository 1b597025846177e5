"""Supervised fine-tuning (SFT + RAG) baseline: a LoRA adapter for a small causal LM, trained on CPU.

SyllabusQA 4.1 / appendix F: LLaMA-2 fine-tuned with LoRA (peft) on the train split, on the J.1 RAG
prompt (top-5 BM25 snippets + question) with the annotated answer as the target; AdamW, a cosine
schedule with warm-up and gradient clipping. Here the default model is the SmolLM2-135M-Instruct of
:mod:`evaluation.llm`, so it runs on a CPU; ``SftConfig.base_model_dir`` points at any HF model directory.

Training loop: a plain PyTorch loop rather than ``transformers.Trainer``. It is ~40 lines, needs no
``datasets``/``accelerate`` plumbing, reports progress per step through our ``ProgressCallback``, makes
the seeding (LoRA init, dropout, data order) explicit, and does not depend on Trainer arguments that
change between transformers releases. The loss (:func:`answer_loss`) projects only answer positions onto
the vocabulary (full logits of a 4 x 512-token SmolLM2 batch are 0.4 GB per copy); activations still
take ~5 GB at that size, which ``SftConfig.gradient_checkpointing`` trades for ~30% more compute. The
paper's learning rate, warm-up share and LoRA rank are not legible in our copy of it; the defaults
below are common LoRA values. Long prompts lose their lowest-ranked snippets (``evaluation.sft_data``).

The adapter is written with ``save_pretrained`` (``adapter_config.json`` + ``adapter_model.safetensors``)
and :data:`SFT_JSON` beside it records the config and the result; ``run_system("sft", items,
SystemOptions(adapter_dir=...))`` or :func:`sft_backend` generate with it.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Optional

from evaluation.chunking import RAG_CHUNK_OVERLAP, RAG_CHUNK_SIZE
from evaluation.llm import HFCausalLMBackend
from evaluation.schema import ProgressCallback, QAItem
from evaluation.sft_data import IGNORE_INDEX, SftExample, build_examples, check_items

logger = logging.getLogger(__name__)

SFT_JSON = "sft.json"


@dataclass(frozen=True)
class SftConfig:
    """Hyper-parameters of :func:`finetune_lora` (paper appendix F where it gives them).

    Attributes:
        max_steps: optimizer steps (the data are cycled, reshuffled each pass).
        learning_rate: AdamW peak learning rate.
        lora_r / lora_alpha / lora_dropout: the LoRA adapter.
        batch_size: examples per step (the paper used 8).
        max_length: longest example in tokens; longer ones lose their lowest-ranked snippets first.
        seed: seeds the LoRA init, dropout, the data order and the ``max_train_items`` sample.
        max_train_items: train on a seeded random sample of this many items (None = all).
        base_model_dir: a Hugging Face model directory; None = the default SmolLM2 of ``evaluation.llm``.
        gguf_file: the GGUF file inside ``base_model_dir``, if the model is stored as GGUF.
        target_modules: modules that get LoRA; None = peft's default for the architecture
            (``q_proj``/``v_proj`` for LLaMA-style models, ``c_attn`` for GPT-2).
        k / chunk_size / chunk_overlap: RAG snippets, as :class:`evaluation.baselines.SystemOptions`.
        warmup_ratio: share of steps with a linear warm-up before the cosine decay.
        weight_decay: AdamW weight decay.
        max_grad_norm: gradient clipping norm.
        device: torch device.
        gradient_checkpointing: recompute activations in the backward pass (much less memory, slower).
    """

    max_steps: int = 200
    learning_rate: float = 2e-4
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.05
    batch_size: int = 4
    max_length: int = 512
    seed: int = 0
    max_train_items: Optional[int] = None
    base_model_dir: Optional[str] = None
    gguf_file: Optional[str] = None
    target_modules: Optional[tuple[str, ...]] = None
    k: int = 5
    chunk_size: int = RAG_CHUNK_SIZE
    chunk_overlap: int = RAG_CHUNK_OVERLAP
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    device: str = "cpu"
    gradient_checkpointing: bool = False

    def __post_init__(self) -> None:
        """Reject values that would fail late, inside the training loop."""
        for name in ("max_steps", "batch_size", "max_length", "lora_r", "k"):
            if getattr(self, name) < 1:
                raise ValueError(f"SftConfig.{name}={getattr(self, name)} must be at least 1")
        if self.max_train_items is not None and self.max_train_items < 1:
            raise ValueError(f"SftConfig.max_train_items={self.max_train_items} must be at least 1 or None")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"SftConfig.warmup_ratio={self.warmup_ratio} must be in [0, 1)")


@dataclass(frozen=True)
class SftResult:
    """What a fine-tuning run produced.

    Attributes:
        adapter_dir: the saved adapter (and :data:`SFT_JSON`).
        steps: optimizer steps taken.
        train_loss: mean training loss (answer tokens only) over all steps.
        seconds: wall time of the whole call (loading included).
        base_model: the base model (GGUF file name or directory).
        n_train: items in the training pool (after ``max_train_items``).
        n_seen: distinct items the steps actually drew (fewer than ``n_train`` when
            ``max_steps * batch_size`` does not cover one epoch).
        first_loss / last_loss: loss of the first and last step.
        loss_history: loss of every step.
        mean_snippets: snippets per prompt of the drawn items after fitting ``max_length`` (``k`` when
            nothing was cut).
        n_answer_truncated: drawn items whose answer was cut to fit ``max_length``.
        trainable_parameters: LoRA parameters trained.
    """

    adapter_dir: Path
    steps: int
    train_loss: float
    seconds: float
    base_model: str
    n_train: int
    n_seen: int = 0
    first_loss: float = math.nan
    last_loss: float = math.nan
    loss_history: tuple[float, ...] = field(default=(), repr=False)
    mean_snippets: float = 0.0
    n_answer_truncated: int = 0
    trainable_parameters: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        data = asdict(self)
        data["adapter_dir"] = str(self.adapter_dir)
        data["loss_history"] = list(self.loss_history)
        return data


def select_items(items: Sequence[QAItem], max_items: Optional[int], seed: int) -> list[QAItem]:
    """Return all items, or a seeded random sample of ``max_items`` kept in input order.

    A sample rather than the first rows, because release files are grouped by syllabus.
    """
    if max_items is None or max_items >= len(items):
        return list(items)
    chosen = sorted(random.Random(seed).sample(range(len(items)), max_items))
    return [items[i] for i in chosen]


def collate(examples: Sequence[SftExample], pad_id: int) -> dict[str, Any]:
    """Right-pad a batch; padding gets attention 0 and label ``IGNORE_INDEX``."""
    import torch

    width = max(len(e.input_ids) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE_INDEX, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        input_ids[row, :n] = torch.tensor(example.input_ids)
        labels[row, :n] = torch.tensor(example.labels)
        attention[row, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}


def answer_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Mean cross-entropy over the answer tokens, projecting only their positions onto the vocabulary.

    Equal to ``model(**batch).loss`` (transformers' causal-LM loss with ``labels``), but the LM head runs
    only where the next token is labelled (``logits_to_keep`` as a boolean mask, transformers 5): with a
    49k-token vocabulary the full ``[batch, length, vocab]`` logits cost gigabytes for a 512-token batch
    of 4, while answers are a few dozen tokens. A model that ignores the mask returns every position's
    logits, which are then selected here instead.

    Args:
        model: a causal LM (or its peft wrapper).
        batch: ``input_ids``, ``attention_mask`` and ``labels`` (``IGNORE_INDEX`` outside the answers).

    Returns:
        A scalar tensor.
    """
    import torch.nn.functional as F

    labels = batch["labels"]
    keep = (labels != IGNORE_INDEX).roll(-1, dims=1)  # position t predicts token t + 1
    keep[:, -1] = False
    output = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], logits_to_keep=keep)
    logits = output.logits
    if logits.dim() == 3:  # the mask was not applied: every position's logits came back
        logits = logits[keep]
    targets = labels.roll(-1, dims=1)[keep]
    return F.cross_entropy(logits.float(), targets)


def _batches(n_examples: int, batch_size: int, steps: int, seed: int) -> list[list[int]]:
    """Indices of each step's batch: seeded shuffles of the data, one after another."""
    rng = random.Random(seed)
    order: list[int] = []
    batches: list[list[int]] = []
    while len(batches) < steps:
        while len(order) < batch_size:  # fewer items than a batch: repeat whole shuffled passes
            fresh = list(range(n_examples))
            rng.shuffle(fresh)
            order += fresh
        batches.append(order[:batch_size])
        del order[:batch_size]
    return batches


def finetune_lora(
    train_items: Sequence[QAItem],
    out_dir: Path,
    config: SftConfig = SftConfig(),
    progress: Optional[ProgressCallback] = None,
) -> SftResult:
    """Fine-tune a LoRA adapter on (RAG prompt, answer) pairs and save it to ``out_dir``.

    Args:
        train_items: training items, each with its syllabus text (``document``) and answer.
        out_dir: where the adapter and :data:`SFT_JSON` go (created; existing files are replaced).
        config: see :class:`SftConfig`.
        progress: called with (steps done, max_steps) after each optimizer step.

    Returns:
        The run's :class:`SftResult`.

    Raises:
        ValueError: no items, an item without a document or answer (names the ids), or an item whose
            bare prompt does not fit ``config.max_length``.
        FloatingPointError: the loss became NaN or infinite (names the step).
        evaluation.llm.LLMConfigurationError: the default model package is missing.
    """
    check_items(train_items)
    import torch
    from peft import LoraConfig, TaskType, get_peft_model
    from transformers import get_cosine_schedule_with_warmup

    start = time.perf_counter()
    items = select_items(train_items, config.max_train_items, config.seed)
    base = HFCausalLMBackend(config.base_model_dir, gguf_file=config.gguf_file, device=config.device)
    model, tokenizer = base.load()
    schedule = _batches(len(items), config.batch_size, config.max_steps, config.seed)
    # Only the items the schedule draws are tokenized: a few steps on a 3000-item split stay quick.
    used = sorted({index for batch in schedule for index in batch})
    built = build_examples(
        [items[i] for i in used],
        tokenizer,
        base.render,
        k=config.k,
        chunk_size=config.chunk_size,
        chunk_overlap=config.chunk_overlap,
        max_length=config.max_length,
    )
    examples = dict(zip(used, built, strict=True))
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    torch.manual_seed(config.seed)  # LoRA's A matrices are drawn from the global generator; so is dropout
    lora = LoraConfig(
        task_type=TaskType.CAUSAL_LM,
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules=list(config.target_modules) if config.target_modules else None,
    )
    peft_model = get_peft_model(model, lora)
    if config.gradient_checkpointing:  # non-reentrant: works although the frozen embeddings need no grad
        peft_model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    trainable = [p for p in peft_model.parameters() if p.requires_grad]
    n_trainable = sum(p.numel() for p in trainable)
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate, weight_decay=config.weight_decay)
    scheduler = get_cosine_schedule_with_warmup(
        optimizer, math.ceil(config.warmup_ratio * config.max_steps), config.max_steps
    )
    logger.info(
        "SFT: %d items (%d drawn), %d steps of %d, %d trainable parameters, base %s",
        len(items),
        len(used),
        config.max_steps,
        config.batch_size,
        n_trainable,
        base.name,
    )
    peft_model.train()
    losses: list[float] = []
    for step, indices in enumerate(schedule, start=1):
        batch = {k: v.to(config.device) for k, v in collate([examples[i] for i in indices], pad_id).items()}
        loss = answer_loss(peft_model, batch)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"SFT step {step}: loss is {loss.item()} (lower the learning rate)")
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.item()))
        logger.debug("SFT step %d/%d loss %.4f", step, config.max_steps, losses[-1])
        if progress is not None:
            progress(step, config.max_steps)
    peft_model.eval()

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    peft_model.save_pretrained(str(out_dir))
    result = SftResult(
        adapter_dir=out_dir,
        steps=len(losses),
        train_loss=sum(losses) / len(losses),
        seconds=time.perf_counter() - start,
        base_model=base.gguf_file or base.model_dir or base.name,
        n_train=len(items),
        n_seen=len(used),
        first_loss=losses[0],
        last_loss=losses[-1],
        loss_history=tuple(losses),
        mean_snippets=sum(e.n_snippets for e in built) / len(built),
        n_answer_truncated=sum(e.answer_truncated for e in built),
        trainable_parameters=n_trainable,
    )
    record = {"config": asdict(config), "result": result.to_dict()}
    (out_dir / SFT_JSON).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    logger.info("SFT: saved adapter to %s (loss %.4f -> %.4f)", out_dir, losses[0], losses[-1])
    return result


def sft_backend(adapter_dir: Path, device: str = "cpu") -> HFCausalLMBackend:
    """Return a backend with the adapter on the base model it was trained on (read from :data:`SFT_JSON`).

    ``run_system("sft", ..., SystemOptions(adapter_dir=...))`` always uses the default SmolLM2 base; for an
    adapter trained on ``SftConfig.base_model_dir`` pass ``SystemOptions(backend=sft_backend(dir))``.

    Raises:
        FileNotFoundError: ``adapter_dir`` has no :data:`SFT_JSON`.
        ValueError: the JSON has no ``config`` object.
    """
    path = Path(adapter_dir) / SFT_JSON
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: not an adapter written by finetune_lora")
    config = json.loads(path.read_text(encoding="utf-8")).get("config")
    if not isinstance(config, dict):
        raise ValueError(f"{path}: no 'config' object")
    return HFCausalLMBackend(
        config.get("base_model_dir"),
        gguf_file=config.get("gguf_file"),
        adapter_dir=adapter_dir,
        device=device,
    )
