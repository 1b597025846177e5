"""A tiny causal LM for tests of the code that scores or generates with one.

Why: the real scoring and generation paths (``evaluation.llm.HFCausalLMBackend``) should run in tests, but
SmolLM2 takes a minute to load on a busy CPU; a seeded 2-layer Llama with a byte vocabulary runs the same
transformers code in milliseconds and gives the same weights every time.
"""

from __future__ import annotations

from typing import Any


def tiny_llama(max_position_embeddings: int) -> Any:
    """A randomly initialised (seed 0) 2-layer Llama over 256 byte ids, in eval mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=256,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_position_embeddings,
    )
    return LlamaForCausalLM(config).eval()
