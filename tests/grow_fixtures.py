"""Shared builders for the test_grow_* files (no tests here).

Models come from `backend.model.build_model`, exactly as the engine builds
them (SDPA attention), at tiny sizes so the whole grow suite stays fast on 2
CPU cores.
"""

from __future__ import annotations

import torch
from torch import nn

from growcockpit.backend.data.blocks import Batch
from growcockpit.backend.model import build_model
from growcockpit.families import FAMILY_SPECS
from growcockpit.plan.families import family_facts
from growcockpit.plan.types import ModelSpec

VOCAB = 61
SEQ = 16
FAMILIES = tuple(FAMILY_SPECS)  # every registered family; a new one is tested by default


class FakeTokenizer:
    """What build_model reads from a tokenizer: its length and two special ids."""

    def __init__(self, vocab: int = VOCAB) -> None:
        self.vocab = vocab
        self.pad_token_id = 0
        self.eos_token_id = vocab - 1

    def __len__(self) -> int:
        return self.vocab


def tiny_spec(
    family: str, *, hidden: int = 32, heads: int = 4, ffn: int = 64, layers: int = 4
) -> ModelSpec:
    return ModelSpec(
        family=family,
        hidden_size=hidden,
        num_heads=heads,
        intermediate_size=ffn,
        max_seq_len=SEQ,
        final_layers=layers,
        dropout=0.1,
    )


def tiny_model(
    family: str,
    *,
    layers: int = 4,
    hidden: int = 32,
    heads: int = 4,
    ffn: int = 64,
    seed: int = 0,
    perturb: float = 0.1,
    dtype: torch.dtype = torch.float32,
) -> nn.Module:
    """A tiny model with every tensor (biases, LayerNorms too) made non-trivial."""
    torch.manual_seed(seed)
    model = build_model(
        tiny_spec(family, hidden=hidden, heads=heads, ffn=ffn, layers=layers),
        layers,
        FakeTokenizer(),  # type: ignore[arg-type]
    )
    with torch.no_grad():
        seen: set[int] = set()
        for p in model.parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            p.add_(perturb * torch.randn_like(p))
    return model.to(dtype)


def tiny_batch(family: str, *, batch: int = 2, seq: int = 12, seed: int = 1) -> Batch:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB - 1, (batch, seq), generator=g)
    if family_facts(family).objective == "causal":
        return Batch(ids, ids.clone())
    labels = torch.full_like(ids, -100)
    labels[:, ::3] = ids[:, ::3]
    return Batch(ids, labels)


def logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out: torch.Tensor = model(input_ids=ids).logits
    return out


def state_equal(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(
        sa[k].shape == sb[k].shape and torch.equal(sa[k], sb[k]) for k in sa
    )


def snapshot(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def storages(model: nn.Module) -> set[int]:
    return {p.untyped_storage().data_ptr() for p in model.parameters()}
