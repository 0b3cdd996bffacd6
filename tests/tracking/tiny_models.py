"""A tiny GPT-2 and random token batches for the tracking tests (no download, CPU, ms a step)."""

from __future__ import annotations

import torch
from transformers import GPT2Config, GPT2LMHeadModel

VOCAB = 64


def tiny_gpt2(layers: int = 2, seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_positions=32,
        n_embd=32,
        n_layer=layers,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def batch(size: int = 4, length: int = 16) -> torch.Tensor:
    return torch.randint(0, VOCAB, (size, length))
