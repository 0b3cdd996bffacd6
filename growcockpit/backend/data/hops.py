"""k-hop induction (`data.source = "task:hops"`): generated sequences, a fixed vocabulary.

For X = x_0..x_{N-1} over an alphabet Σ, σ(i) = 1 + max{ j < i : x_j = x_i } (undefined
when x_i has not occurred before) and hop_k(X)_i = x_{σ^k(i)} (undefined when any step is).
Answering it takes depth that grows with log k (Sanford, Hsu & Telgarsky, ICML 2024), so
it is a task on which a deeper model must win: the place to ask whether growing the depth
pays on a given machine (docs/hops.md).

The task's batches (`HopBlocks`, backend/data/blocks.py) draw sequences uniform over Σ as
pure functions of (seed, stream, index): train batch i and validation batch j come from
different streams, so validation never repeats training, and a resumed run sees the
batches the uninterrupted run would have seen.

Alignment with the causal loss: the product's causal loss scores position t's logits
against label t + 1 (families/gpt2.py `causal_lm_loss`). The label tensor therefore holds
hop_k(X)_t at index t + 1, so the prediction made at position t, which sees x_0..x_t only,
is scored against hop_k(X)_t; index 0 and every undefined hop hold -100 (no loss). The
last position's answer has no slot and is not scored.
"""

from __future__ import annotations

import string

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from growcockpit.backend.data.tokenizer import _fast

SYMBOLS = string.ascii_lowercase + string.ascii_uppercase + string.digits + "+/"  # 64
END = "<|endoftext|>"
TRAIN_STREAM, VAL_STREAM = 0, 1


def hop_targets(x: torch.Tensor, hops: int) -> torch.Tensor:
    """hop_k(X) for each row of `x` (batch × N symbol ids), -100 where undefined.

    One pass over the positions builds σ for the whole batch (the last position of each
    symbol so far), then k gathers follow it; -1 marks "undefined" and stays undefined.
    """
    rows, n = x.shape
    alphabet = int(x.max()) + 1 if x.numel() else 1
    last = torch.full((rows, alphabet), -1, dtype=torch.long)
    sigma = torch.empty((rows, n), dtype=torch.long)
    at = torch.arange(rows)
    for i in range(n):
        prev = last[at, x[:, i]]
        sigma[:, i] = torch.where(prev >= 0, prev + 1, -1)
        last[at, x[:, i]] = i
    idx = torch.arange(n).expand(rows, n).clone()
    for _ in range(hops):
        idx = torch.where(idx >= 0, sigma.gather(1, idx.clamp(min=0)), idx)
    answer = x.gather(1, idx.clamp(min=0))
    return torch.where(idx >= 0, answer, torch.full_like(answer, -100))


def causal_labels(targets: torch.Tensor) -> torch.Tensor:
    """Labels for the causal loss's shift: index t + 1 holds position t's answer."""
    labels = torch.full_like(targets, -100)
    labels[:, 1:] = targets[:, :-1]
    return labels


def fixed_tokenizer(alphabet: int) -> PreTrainedTokenizerFast:
    """The alphabet's symbols as ids 0..|Σ|-1 and end-of-text as |Σ|: nothing trained or read."""
    vocab = {SYMBOLS[i]: i for i in range(alphabet)}
    vocab[END] = alphabet
    core = Tokenizer(models.WordLevel(vocab, unk_token=END))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return _fast(tokenizer_object=core, eos_token=END, bos_token=END, unk_token=END, pad_token=END)


__all__ = [
    "END",
    "SYMBOLS",
    "TRAIN_STREAM",
    "VAL_STREAM",
    "causal_labels",
    "fixed_tokenizer",
    "hop_targets",
]
