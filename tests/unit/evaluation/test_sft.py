"""Tests for evaluation/sft.py and evaluation/sft_data.py on real SyllabusQA train items.

Two bases: a 2-layer LLaMA built from a config with SmolLM2's tokenizer (fast: masking, seeding, custom
base) and the real default SmolLM2-135M (one 3-step fine-tune, then ``run_system('sft')`` with it). The
SmolLM2 weights are read from disk once per module and copied for each use.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from annotation.importers.syllabusqa_csv import read_qa_rows
from annotation.textnorm import decode_mac_roman
from evaluation.baselines import SnippetRetriever, SystemOptions, run_system, system_messages
from evaluation.llm import HFCausalLMBackend
from evaluation.schema import QAItem
from evaluation.sft import (
    SFT_JSON,
    SftConfig,
    answer_loss,
    collate,
    finetune_lora,
    select_items,
    sft_backend,
)
from evaluation.sft_data import IGNORE_INDEX, build_examples, join_prompt_and_target

N_ITEMS = 6


@pytest.fixture
def train_items(shared_data) -> list[QAItem]:
    """The first train rows of the first two syllabi of the real release, with their syllabus text."""
    root = shared_data("syllabusqa")
    rows = [row for row in read_qa_rows(root) if row.split == "train"]
    names = list(dict.fromkeys(row.syllabus_name for row in rows))[:2]
    picked = [row for row in rows if row.syllabus_name == names[0]][: N_ITEMS // 2]
    picked += [row for row in rows if row.syllabus_name == names[1]][: N_ITEMS // 2]
    text_dir = root / "syllabi" / "syllabi_redacted" / "text"
    texts = {n: decode_mac_roman((text_dir / f"{n}.txt").read_bytes(), text_dir / f"{n}.txt") for n in names}
    return [
        QAItem(r.id, r.question, r.answer, r.question_type, r.syllabus_name, texts[r.syllabus_name])
        for r in picked
    ]


@pytest.fixture(scope="module")
def smollm2() -> tuple[Any, Any]:
    """The default SmolLM2-135M and its tokenizer, loaded once (reading the GGUF file takes ~20 s)."""
    return HFCausalLMBackend().load()


class PreloadedBackend(HFCausalLMBackend):
    """HFCausalLMBackend that copies an already loaded base instead of reading it from disk again.

    The adapter is still read from ``adapter_dir`` with peft, as in :meth:`HFCausalLMBackend.load`.
    """

    base: tuple[Any, Any]

    def load(self) -> tuple[Any, Any]:
        if self._model is None:
            from peft import PeftModel

            model, self._tokenizer = copy.deepcopy(self.base[0]), self.base[1]
            if self.adapter_dir:
                model = PeftModel.from_pretrained(model, self.adapter_dir)
            self._model = model.eval()
        return self._model, self._tokenizer


@pytest.fixture
def preloaded_default(smollm2, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the default backend of evaluation.sft and evaluation.baselines reuse the loaded SmolLM2."""
    monkeypatch.setattr(PreloadedBackend, "base", smollm2, raising=False)
    monkeypatch.setattr("evaluation.sft.HFCausalLMBackend", PreloadedBackend)
    monkeypatch.setattr("evaluation.baselines.HFCausalLMBackend", PreloadedBackend)


@pytest.fixture(scope="module")
def tiny_base(smollm2, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A randomly initialised 2-layer LLaMA with SmolLM2's tokenizer and chat template, saved to disk."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = smollm2[1]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("tiny_base")
    LlamaForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(out)


def test_join_prompt_and_target__only_answer_tokens_carry_labels() -> None:
    input_ids, labels = join_prompt_and_target([5, 6, 7], [8, 9], max_length=10)
    assert input_ids == [5, 6, 7, 8, 9]
    assert labels == [IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX, 8, 9]


def test_join_prompt_and_target__cuts_the_answer_and_rejects_a_full_prompt() -> None:
    input_ids, labels = join_prompt_and_target([1, 2, 3], [4, 5, 6], max_length=4)
    assert input_ids == [1, 2, 3, 4] and labels == [IGNORE_INDEX] * 3 + [4]
    with pytest.raises(ValueError, match="3 tokens; max_length=3"):
        join_prompt_and_target([1, 2, 3], [4], max_length=3)
    with pytest.raises(ValueError, match="no token"):
        join_prompt_and_target([1], [], max_length=3)


def test_build_examples__prompt_is_the_generation_prompt_and_labels_are_the_answer(
    train_items: list[QAItem], tiny_base: str
) -> None:
    backend = HFCausalLMBackend(tiny_base)
    _, tokenizer = backend.load()
    examples = build_examples(
        train_items[:2], tokenizer, backend.render, k=5, chunk_size=1000, chunk_overlap=200, max_length=4096
    )
    retriever = SnippetRetriever(1000, 200, 5)
    for item, example in zip(train_items[:2], examples, strict=True):
        assert example.n_snippets == 5 and not example.answer_truncated
        n_prompt = example.labels.count(IGNORE_INDEX)
        prompt = tokenizer.decode(list(example.input_ids[:n_prompt]))
        assert prompt == backend.render(system_messages("sft", item.question, retriever(item)))
        answer_ids = [t for t in example.labels if t != IGNORE_INDEX]
        assert answer_ids == list(example.input_ids[n_prompt:])
        assert tokenizer.decode(answer_ids) == item.answer.strip() + "<|im_end|>\n"


def test_build_examples__drops_lowest_ranked_snippets_to_fit(
    train_items: list[QAItem], tiny_base: str
) -> None:
    backend = HFCausalLMBackend(tiny_base)
    _, tokenizer = backend.load()
    kwargs = {"k": 5, "chunk_size": 1000, "chunk_overlap": 200}
    (long,) = build_examples(train_items[:1], tokenizer, backend.render, max_length=4096, **kwargs)
    (short,) = build_examples(train_items[:1], tokenizer, backend.render, max_length=400, **kwargs)
    assert short.n_snippets < long.n_snippets == 5
    assert len(short.input_ids) <= 400
    assert not short.answer_truncated  # the snippets went, the whole answer stayed
    assert [t for t in short.labels if t != IGNORE_INDEX] == [t for t in long.labels if t != IGNORE_INDEX]
    with pytest.raises(ValueError, match=f"item '{train_items[0].id}'.*raise max_length"):
        build_examples(train_items[:1], tokenizer, backend.render, max_length=20, **kwargs)


def test_answer_loss__equals_the_causal_lm_loss_on_a_padded_batch(
    train_items: list[QAItem], tiny_base: str
) -> None:
    import torch

    backend = HFCausalLMBackend(tiny_base)
    model, tokenizer = backend.load()
    examples = build_examples(
        train_items[:3], tokenizer, backend.render, k=2, chunk_size=300, chunk_overlap=50, max_length=512
    )
    assert len({len(e.input_ids) for e in examples}) > 1  # the batch really is padded
    batch = collate(examples, tokenizer.pad_token_id)
    with torch.no_grad():
        expected = model(**batch).loss
        assert answer_loss(model, batch).item() == pytest.approx(expected.item(), rel=1e-5)
        batch["labels"][0, batch["labels"][0] != IGNORE_INDEX] = IGNORE_INDEX  # drop one answer
        assert answer_loss(model, batch).item() == pytest.approx(model(**batch).loss.item(), rel=1e-5)


def test_finetune_lora__rejects_no_items_and_items_without_document(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="training set is empty"):
        finetune_lora([], tmp_path)
    with pytest.raises(ValueError, match="no syllabus text.*'q2'"):
        finetune_lora([QAItem("q1", "Q?", "A", document="text"), QAItem("q2", "Q?", "A")], tmp_path)
    with pytest.raises(ValueError, match="empty answer.*'q3'"):
        finetune_lora([QAItem("q3", "Q?", " ", document="text")], tmp_path)
    assert not any(tmp_path.iterdir())


def test_sft_config__rejects_values_that_would_fail_in_training() -> None:
    with pytest.raises(ValueError, match="max_steps=0"):
        SftConfig(max_steps=0)
    with pytest.raises(ValueError, match="max_train_items=0"):
        SftConfig(max_train_items=0)


def test_select_items__seeded_sample_in_input_order(train_items: list[QAItem]) -> None:
    first = select_items(train_items, 3, seed=1)
    assert first == select_items(train_items, 3, seed=1)
    assert [train_items.index(i) for i in first] == sorted(train_items.index(i) for i in first)
    assert select_items(train_items, None, seed=1) == train_items


def test_finetune_lora__same_seed_same_loss_on_a_custom_base(
    train_items: list[QAItem], tiny_base: str, tmp_path: Path
) -> None:
    config = SftConfig(max_steps=3, batch_size=2, max_length=512, base_model_dir=tiny_base, seed=3)
    first = finetune_lora(train_items, tmp_path / "a", config)
    second = finetune_lora(train_items, tmp_path / "b", config)
    assert first.loss_history == pytest.approx(second.loss_history, rel=1e-6)
    recomputed = finetune_lora(train_items, tmp_path / "c", replace(config, gradient_checkpointing=True))
    assert recomputed.loss_history == pytest.approx(first.loss_history, rel=1e-5)
    assert first.n_train == first.n_seen == len(train_items) and first.steps == 3
    assert first.base_model == tiny_base
    predictions = run_system(
        "sft", train_items[:1], SystemOptions(backend=sft_backend(first.adapter_dir), max_new_tokens=3)
    )
    assert predictions[0].id == train_items[0].id
    assert "+a" in predictions[0].meta["backend"]


def test_finetune_lora__smollm2_adapter_trains_saves_and_generates(
    train_items: list[QAItem], tmp_path: Path, preloaded_default: None
) -> None:
    from safetensors.torch import load_file

    steps: list[tuple[int, int]] = []
    config = SftConfig(max_steps=3, batch_size=1, max_length=320, learning_rate=1e-3)
    result = finetune_lora(train_items[:4], tmp_path / "adapter", config, lambda d, t: steps.append((d, t)))
    assert result.steps == 3 and steps == [(1, 3), (2, 3), (3, 3)]
    assert result.n_train == 4 and result.n_seen == 3  # 3 steps of 1 item draw 3 of the 4
    assert all(math.isfinite(loss) for loss in result.loss_history)
    assert result.train_loss == pytest.approx(sum(result.loss_history) / 3)
    assert (result.adapter_dir / "adapter_config.json").is_file()
    weights = load_file(str(result.adapter_dir / "adapter_model.safetensors"))
    lora_b = [tensor for name, tensor in weights.items() if "lora_B" in name]
    assert lora_b and all(tensor.abs().sum() > 0 for tensor in lora_b)  # B starts at zero in LoRA
    record = json.loads((result.adapter_dir / SFT_JSON).read_text(encoding="utf-8"))
    assert record["config"]["max_steps"] == 3
    assert record["result"]["loss_history"] == list(result.loss_history)

    # short snippets keep the two prompts small: generation time goes with prompt length on a CPU
    options = SystemOptions(
        adapter_dir=str(result.adapter_dir), max_new_tokens=6, chunk_size=300, chunk_overlap=50
    )
    predictions = run_system("sft", train_items[4:6], options)
    assert [p.id for p in predictions] == [i.id for i in train_items[4:6]]
    assert predictions[0].meta["backend"].endswith("+adapter")
    assert any(p.answer for p in predictions)
    assert len(predictions[0].context) == 5
