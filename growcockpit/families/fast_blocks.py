"""Training-time block forwards with fused projections, over the Hugging Face block's own weights.

Why: a Hugging Face BERT or Llama block projects query, key and value (and Llama's
gate and up) with separate linears, each its own matmul forward and two backward,
and routes through generic attention and chunking helpers. A compact loop
(nanoGPT) does one fused projection instead. GPT-2's block already projects q|k|v
at once; what its fast forward drops is the Python around the arithmetic (nested
module calls, keyword deprecation wrappers, config lookups, the attention
dispatcher), a fixed cost per block that weighs most in small, shallow stages.
These forwards do the same
arithmetic as the HF block they replace: the projections' weights (and biases) are
concatenated at each call and multiplied once, the result split, and everything
else (SDPA with the module's scale and dropout, rotary embedding, norms, residuals,
activations) is HF's own code path on the block's own submodules, in HF's order
(the same random draws for dropout).

The block keeps its HF modules and parameters: nothing is converted, stored or
swapped back. The staged forward (backend/loop/forward.py) installs one of these
as the block's `forward` only for the length of its call, inside `Module.__call__`,
so module hooks (per-layer timing, ramp gates) still run around it, and growth
operators, checkpoints, `final/` and `init_from` only ever see the HF layout.
Each forward takes exactly the arguments the staged forward passes its family's
blocks (hidden states; Llama's rotary `position_embeddings` too), nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# (block, hidden states, keyword arguments of the family's block call) -> hidden states
BlockForward = Callable[..., torch.Tensor]


def fused_linear(x: torch.Tensor, parts: list[nn.Linear]) -> torch.Tensor:
    """`torch.cat([p(x) for p in parts], -1)` as one matmul over the concatenated weights."""
    weight = torch.cat([p.weight for p in parts])
    bias = None if parts[0].bias is None else torch.cat([p.bias for p in parts])
    return F.linear(x, weight, bias)


def heads(x: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(B, T, n·d) -> (B, n, T, d), as HF's attention views its projections."""
    return x.view(*x.shape[:-1], -1, head_dim).transpose(1, 2)


def merge_heads(y: torch.Tensor) -> torch.Tensor:
    """(B, n, T, d) -> (B, T, n·d), as HF's SDPA path returns it."""
    return y.transpose(1, 2).reshape(y.shape[0], y.shape[2], -1)


def bert_block_forward(block: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    """`BertLayer.forward` (an encoder layer: no mask, no cache, no cross-attention)."""
    b: Any = block
    attn = b.attention.self
    qkv = fused_linear(hidden_states, [attn.query, attn.key, attn.value])
    q, k, v = (heads(x, attn.attention_head_size) for x in torch.split(qkv, attn.all_head_size, -1))
    y = F.scaled_dot_product_attention(
        q,
        k,
        v,
        dropout_p=attn.dropout.p if attn.training else 0.0,
        scale=attn.scaling,
        is_causal=bool(attn.is_causal) and q.shape[2] > 1,
    )
    h = _post_ln(b.attention.output, merge_heads(y), hidden_states)
    mid = b.intermediate.intermediate_act_fn(b.intermediate.dense(h))
    return _post_ln(b.output, mid, h)


def _post_ln(part: Any, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """BertSelfOutput / BertOutput: dense, dropout, LayerNorm of the residual sum."""
    x = F.dropout(part.dense(x), part.dropout.p, part.dropout.training)
    norm = part.LayerNorm
    return F.layer_norm(x + residual, norm.normalized_shape, norm.weight, norm.bias, norm.eps)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """HF's `apply_rotary_pos_emb` for one tensor, the same elementwise arithmetic, with its
    halves taken by one `chunk` (one operator forward, one backward) rather than two slices."""
    x1, x2 = x.chunk(2, dim=-1)
    return (x * cos) + (torch.cat((-x2, x1), dim=-1) * sin)


def llama_block_forward(
    block: nn.Module,
    hidden_states: torch.Tensor,
    *,
    position_embeddings: tuple[torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """`LlamaDecoderLayer.forward` (no mask: causal; no cache)."""
    from transformers.integrations.sdpa_attention import use_gqa_in_sdpa
    from transformers.models.llama.modeling_llama import repeat_kv

    b: Any = block
    attn, mlp = b.self_attn, b.mlp
    sizes = [attn.q_proj.out_features, attn.k_proj.out_features, attn.v_proj.out_features]
    qkv = fused_linear(b.input_layernorm(hidden_states), [attn.q_proj, attn.k_proj, attn.v_proj])
    q, k, v = (heads(t, attn.head_dim) for t in torch.split(qkv, sizes, -1))
    cos, sin = (t.unsqueeze(1) for t in position_embeddings)
    q, k = rotate(q, cos, sin), rotate(k, cos, sin)
    groups = attn.num_key_value_groups
    gqa = groups > 1 and use_gqa_in_sdpa(None, k, v)  # as HF's SDPA path decides
    if groups > 1 and not gqa:
        k, v = repeat_kv(k, groups), repeat_kv(v, groups)
    y = F.scaled_dot_product_attention(
        q,
        k,
        v,
        dropout_p=attn.attention_dropout if attn.training else 0.0,
        scale=attn.scaling,
        is_causal=q.shape[2] > 1,
        enable_gqa=gqa,
    )
    h: torch.Tensor = hidden_states + attn.o_proj(merge_heads(y))
    gate_up = fused_linear(b.post_attention_layernorm(h), [mlp.gate_proj, mlp.up_proj])
    gate, up = torch.split(gate_up, mlp.gate_proj.out_features, -1)
    out: torch.Tensor = h + mlp.down_proj(mlp.act_fn(gate) * up)
    return out


def conv1d(x: torch.Tensor, part: Any) -> torch.Tensor:
    """HF's `Conv1D` (weight stored in × out): the same `addmm`, without the module call."""
    out = torch.addmm(part.bias, x.view(-1, x.size(-1)), part.weight)
    return out.view(*x.shape[:-1], part.nf)


def gpt2_block_forward(block: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    """`GPT2Block.forward` (self-attention only: no mask, no cache, no cross-attention)."""
    b: Any = block
    attn, mlp = b.attn, b.mlp
    x = F.layer_norm(hidden_states, b.ln_1.normalized_shape, b.ln_1.weight, b.ln_1.bias, b.ln_1.eps)
    q, k, v = (
        heads(t, attn.head_dim) for t in torch.split(conv1d(x, attn.c_attn), attn.split_size, 2)
    )
    y = F.scaled_dot_product_attention(
        q,
        k,
        v,
        dropout_p=attn.attn_dropout.p if attn.training else 0.0,
        scale=attn.scaling,
        is_causal=q.shape[2] > 1,
    )
    y = conv1d(merge_heads(y), attn.c_proj)
    h = F.dropout(y, attn.resid_dropout.p, attn.resid_dropout.training) + hidden_states
    x = F.layer_norm(h, b.ln_2.normalized_shape, b.ln_2.weight, b.ln_2.bias, b.ln_2.eps)
    x = conv1d(mlp.act(conv1d(x, mlp.c_fc)), mlp.c_proj)
    out: torch.Tensor = h + F.dropout(x, mlp.dropout.p, mlp.dropout.training)
    return out


__all__ = [
    "BlockForward",
    "bert_block_forward",
    "fused_linear",
    "gpt2_block_forward",
    "llama_block_forward",
]
