"""A compact reference model per family, nanoGPT-style: the yardstick for the product's step.

Why it exists: growcockpit trains Hugging Face modules through its staged forward,
per-layer metrics and guarded update. Whether that costs speed is only answerable
against the plainest code that does the same arithmetic: one fused QKV projection
into `F.scaled_dot_product_attention`, no module hooks, no masks, `F.cross_entropy`
on the logits, nothing else. `bench/reference/weights.py` loads a product model's
weights into it, and tests/bench/test_reference_model.py proves the loss equal to
1e-5, so a speed gap between the two is overhead, never different math.

The three families, as the product builds them (growcockpit/families/):

* GPT-2: pre-LN blocks, tanh GELU, learned positions, LM head tied to the token table.
* BERT MLM: post-LN blocks, erf GELU, token-type 0 and learned positions, the MLM
  transform (dense, GELU, LayerNorm) and the tied decoder with its bias, logits only
  at the masked positions.
* Llama: RMSNorm, rotary positions (half-split, as HF rotates), SwiGLU, grouped-query
  attention (SDPA's `enable_gqa`), no biases, an untied head unless tied.

A stage's frozen bottom runs under `no_grad` exactly as `StagedForward` runs it:
`frozen_prefix` blocks (and the embeddings) without autograd, the rest with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

Family = Literal["gpt2", "bert", "llama"]


@dataclass(frozen=True)
class RefShape:
    """What the reference needs of a model's config (read from the HF config by weights.py)."""

    family: Family
    vocab: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    layers: int
    max_seq: int
    eps: float
    dropout: float = 0.0
    rope_theta: float = 10000.0
    tied: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


class Block(nn.Module):
    """One transformer block of any of the three families: which norm, where, which MLP."""

    def __init__(self, s: RefShape) -> None:
        super().__init__()
        self.s = s
        kv = s.kv_heads * s.head_dim
        bias = s.family != "llama"
        self.qkv = nn.Linear(s.hidden, s.hidden + 2 * kv, bias=bias)
        self.proj = nn.Linear(s.hidden, s.hidden, bias=bias)
        self.fc = nn.Linear(s.hidden, (2 if s.family == "llama" else 1) * s.ffn, bias=bias)
        self.out = nn.Linear(s.ffn, s.hidden, bias=bias)
        if s.family == "llama":
            self.norm1: nn.Module = nn.RMSNorm(s.hidden, eps=s.eps)
            self.norm2: nn.Module = nn.RMSNorm(s.hidden, eps=s.eps)
        else:
            self.norm1 = nn.LayerNorm(s.hidden, eps=s.eps)
            self.norm2 = nn.LayerNorm(s.hidden, eps=s.eps)

    def attention(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> torch.Tensor:
        s = self.s
        B, T, _ = x.shape
        kv = s.kv_heads * s.head_dim
        q, k, v = self.qkv(x).split((s.hidden, kv, kv), dim=-1)
        q = q.view(B, T, s.heads, s.head_dim).transpose(1, 2)
        k = k.view(B, T, s.kv_heads, s.head_dim).transpose(1, 2)
        v = v.view(B, T, s.kv_heads, s.head_dim).transpose(1, 2)
        if rope is not None:
            q, k = rotate(q, rope), rotate(k, rope)
        p = s.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=p, is_causal=s.family != "bert", enable_gqa=s.kv_heads != s.heads
        )
        return self.proj(y.transpose(1, 2).reshape(B, T, s.hidden))

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        family = self.s.family
        if family == "llama":
            gate, up = self.fc(x).chunk(2, dim=-1)
            return self.out(F.silu(gate) * up)
        return self.out(F.gelu(self.fc(x), approximate="tanh" if family == "gpt2" else "none"))

    def forward(
        self, x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        p = self.s.dropout if self.training else 0.0
        if self.s.family == "bert":  # post-LN
            x = self.norm1(x + F.dropout(self.attention(x, None), p, self.training))
            return self.norm2(x + F.dropout(self.mlp(x), p, self.training))
        p_res = p if self.s.family == "gpt2" else 0.0  # Llama: attention dropout only
        x = x + F.dropout(self.attention(self.norm1(x), rope), p_res, self.training)
        return x + F.dropout(self.mlp(self.norm2(x)), p_res, self.training)


def rotate(x: torch.Tensor, rope: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """RoPE as Hugging Face's Llama applies it: the head's two halves rotated as pairs."""
    cos, sin = rope
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class ReferenceModel(nn.Module):
    """Embeddings, blocks, head and loss of one family; `loss` mirrors `StagedForward.loss`."""

    def __init__(self, s: RefShape) -> None:
        super().__init__()
        self.s = s
        self.tok = nn.Embedding(s.vocab, s.hidden)
        self.pos = nn.Embedding(s.max_seq, s.hidden) if s.family != "llama" else None
        self.type0 = nn.Parameter(torch.zeros(s.hidden)) if s.family == "bert" else None
        self.emb_norm = nn.LayerNorm(s.hidden, eps=s.eps) if s.family == "bert" else None
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.layers))
        if s.family == "llama":
            self.final_norm: nn.Module = nn.RMSNorm(s.hidden, eps=s.eps)
        elif s.family == "gpt2":
            self.final_norm = nn.LayerNorm(s.hidden, eps=s.eps)
        else:  # BERT's MLM transform: dense, GELU, LayerNorm
            self.transform = nn.Linear(s.hidden, s.hidden)
            self.final_norm = nn.LayerNorm(s.hidden, eps=s.eps)
        self.head_bias = nn.Parameter(torch.zeros(s.vocab)) if s.family == "bert" else None
        self.head = None if s.tied else nn.Linear(s.hidden, s.vocab, bias=False)
        self.frozen_prefix = 0  # blocks (and embeddings) run without autograd: a stage's bottom
        self.embeddings_train = True
        inv = 1.0 / (s.rope_theta ** (torch.arange(0, s.head_dim, 2).float() / s.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids)
        if self.type0 is not None:
            x = x + self.type0
        if self.pos is not None:
            x = x + self.pos.weight[: ids.shape[1]]
        if self.emb_norm is not None:
            x = self.emb_norm(x)
        p = self.s.dropout if self.s.family != "llama" and self.training else 0.0
        return F.dropout(x, p, self.training)

    def rope(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        if self.s.family != "llama":
            return None
        t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        if self.s.family == "bert":
            h = self.final_norm(F.gelu(self.transform(h)))
        else:
            h = self.final_norm(h)
        weight = self.tok.weight if self.head is None else self.head.weight
        return F.linear(h, weight, self.head_bias)

    def loss(
        self, ids: torch.Tensor, labels: torch.Tensor, picked: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The family's training loss, computed as the product computes it (same rows)."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.embeddings_train):
            x = self.embed(ids)
            rope = self.rope(x)
            for block in self.blocks[: self.frozen_prefix]:
                x = block(x, rope)
        if not self.embeddings_train:
            x = x.detach()
        for block in self.blocks[self.frozen_prefix :]:
            x = block(x, rope)
        if self.s.family == "bert":
            rows = x.reshape(-1, x.shape[-1])
            flat = labels.reshape(-1)
            if picked is None:
                picked = (flat != -100).nonzero().squeeze(1)
            return F.cross_entropy(
                self.logits(rows.index_select(0, picked)), flat.index_select(0, picked)
            )
        logits = self.logits(x[:, :-1])
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


__all__ = ["Block", "Family", "RefShape", "ReferenceModel"]
